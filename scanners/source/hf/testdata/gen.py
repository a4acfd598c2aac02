#!/usr/bin/python3
"""Write checkpoint.pt: a PyTorch state dict of 300 small tensors, as
torch.save writes it (a zip: the pickle, then one member per storage).

The hf source's tests and bench/model-sources.sh inflate its storages to
make a multi-GiB checkpoint (sparse on disk) whose pickle and directory are
torch's own. Run with Debian's Python (apt-get install python3-torch):

    cd scanners/source/hf/testdata && /usr/bin/python3 gen.py
"""
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)
sd = {f"model.layers.{i // 6}.{['q', 'k', 'v', 'o', 'up', 'down'][i % 6]}_proj.weight": torch.zeros(4) for i in range(300)}
torch.save(sd, os.path.join(HERE, "checkpoint.pt"))
