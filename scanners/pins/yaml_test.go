package pins

import (
	"strings"
	"testing"
)

func TestYAML(t *testing.T) {
	k8s := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
    - name: init
      image: busybox
  containers:
    - name: main
      image: registry.example.com/nvidia/pytorch:24.01-py3
    - name: ok
      image: registry.example.com/o/app:1.0@` + digest + `
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: c
              image: &img registry.example.test/train:v3
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: j}
spec:
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          containers:
            - name: pytorch
              image: *img
    Worker:
      template:
        spec:
          containers:
            - <<: &base
                name: pytorch
                image: registry.example.test/worker:latest
`
	ray := `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: r}
spec:
  headGroupSpec:
    template:
      spec:
        containers: [{name: head, image: "rayproject/ray:2.9.0-gpu"}]
  workerGroupSpecs:
    - template:
        spec:
          containers:
            - name: w
              image: rayproject/ray@` + digest + `
`
	gha := `name: ci
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    container: python:3.12
    services:
      redis:
        image: redis:7
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@` + commit + ` # v5
      - uses: ./.github/actions/local
      - uses: docker://alpine:3.19
      - run: |
          pip install -r requirements.txt
          curl -sSL https://example.test/install.sh | bash
  reuse:
    uses: org/repo/.github/workflows/w.yml@main
`
	gitlab := `variables:
  BASE: python:3.12
image: $BASE
services:
  - postgres:16
test:
  image:
    name: registry.example.test/ci@` + digest + `
  script:
    - pip install pytest
    - echo ok
build:
  image: $CI_REGISTRY_IMAGE:$CI_COMMIT_SHA
  script: pip install --upgrade build
`
	compose := `services:
  web:
    image: nginx
  db:
    image: postgres:16@` + digest + `
`
	checkCases(t, []tcase{
		{"kubernetes multi-doc with anchors and merges", "deploy/job.yaml", k8s,
			[]string{"image-latest@7", "image-not-digest@10", "image-not-digest@24", "image-latest@43"}},
		{"ray", "ray.yml", ray, []string{"image-not-digest@8"}},
		{"image volumes", "model.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - {name: c, image: \"r.example.test/srv@" + digest + "\"}\n  volumes:\n    - name: weights\n      image:\n        reference: r.example.test/models/llama:v1\n        pullPolicy: IfNotPresent\n    - name: latest\n      image: {reference: r.example.test/models/llama}\n    - name: pinned\n      image: {reference: \"r.example.test/models/llama@" + digest + "\"}\n    - {name: cache, emptyDir: {}}\n",
			[]string{"image-not-digest@10", "image-latest@13"}},
		{"image volume in a pod template, live shape", "dep.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ml, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: \"r.example.test/srv@" + digest + "\"}]\n      volumes:\n      - image: {pullPolicy: IfNotPresent, reference: \"r.example.test/m:v2\"}\n        name: m\nstatus: {replicas: 1}\n",
			[]string{"image-not-digest@9"}},
		{"github actions", ".github/workflows/ci.yml", gha,
			[]string{"image-not-digest@6", "image-not-digest@9", "action-not-sha@11", "image-not-digest@14", "requirements-not-in-target@16", "curl-pipe-shell@17", "action-not-sha@19"}},
		{"gitlab", ".gitlab-ci.yml", gitlab,
			[]string{"image-not-digest@3", "image-not-digest@5", "pip-unpinned@10", "image-variable@13", "pip-unpinned@14"}},
		{"compose", "docker-compose.yml", compose, []string{"image-latest@3"}},
		{"helm template skipped", "templates/dep.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  {{- range .Values.x }}\n", nil},
		{"broken yaml", "k.yaml", "apiVersion: v1\nkind: Pod\nspec: [\n", []string{"unparsed@3"}},
		{"templated image", "k.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: \"{{ .Values.image }}\"\n  - image: ${{ matrix.img }}\n", []string{"image-variable@5", "image-variable@6"}},
		{"plain yaml ignored", "config.yaml", "lr: 0.1\nimage: foo\n", nil},
	})
}

func TestHelmAndKustomize(t *testing.T) {
	values := `replicaCount: 2
image:
  repository: registry.example.test/vllm/vllm-openai
  tag: v0.6.3
  pullPolicy: IfNotPresent
sidecarImage: busybox
useImage: true
worker:
  image:
    registry: registry.example.test
    repository: team/worker
    tag: "1.2"
    digest: ` + digest + `
  initImage:
    repository: team/init
  exporterImage: "registry.example.test/exporter:latest"
  images:
    - image: {repository: team/a, tag: "2.0@` + digest + `"}
config:
  imageSize: 224
  image: {width: 224}
`
	kust := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deploy.yaml]
images:
  - name: trainer
    newName: registry.example.test/ml/trainer
    newTag: "2024.06"
  - name: server
    newTag: latest
  - name: pinned
    newTag: v1
    digest: ` + digest + `
  - name: renamed-only
    newName: registry.example.test/ml/other
`
	checkCases(t, []tcase{
		{"helm values", "charts/llm/values.yaml", values,
			[]string{"image-not-digest@4", "image-latest@6", "image-not-digest@15", "image-latest@16"}},
		{"helm values variant name", "deploy/values-gpu.yml", "image:\n  repository: team/x\n  tag: latest\n", []string{"image-latest@3"}},
		{"kustomization", "overlays/prod/kustomization.yaml", kust, []string{"image-not-digest@7", "image-latest@9"}},
		{"kustomization without extension", "base/Kustomization", kust, []string{"image-not-digest@7", "image-latest@9"}},
		{"other yaml with image keys ignored", "config.yaml", "image:\n  repository: team/x\n  tag: latest\n", nil},
	})
}

func TestConda(t *testing.T) {
	env := `name: train
channels: [conda-forge]
dependencies:
  - python=3.11
  - pytorch::pytorch
  - numpy>=1.26
  - cudatoolkit 11.8.*
  - pip
  - pip:
      - --extra-index-url https://pkgs.example.test/simple
      - transformers
      - accelerate==0.30.1
`
	checkCases(t, []tcase{
		{"environment.yml", "environment.yml", env,
			[]string{"conda-unpinned@5", "conda-unpinned@6", "conda-unpinned@8", "pip-extra-index-url@10", "pip-unpinned@11", "pip-no-hash@12"}},
	})
}

func TestPython(t *testing.T) {
	src := `import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline
from huggingface_hub import hf_hub_download, snapshot_download
from datasets import load_dataset

MODEL = "meta-llama/Meta-Llama-3-8B"
REV = "` + commit + `"
tok = AutoTokenizer.from_pretrained(MODEL, revision=REV)
model = AutoModelForCausalLM.from_pretrained(
    MODEL,
    trust_remote_code=True,
)
local = AutoModelForCausalLM.from_pretrained("./checkpoints/final")
p = pipeline("text-generation", model="gpt2", revision="main")
p2 = pipeline("sentiment-analysis")
path = hf_hub_download(repo_id="org/weights", filename="m.safetensors")
snapshot_download("org/other", revision=REV)
ds = load_dataset("imdb")
csv = load_dataset("csv", data_files="x.csv")
m = torch.hub.load("pytorch/vision", "resnet50")
m2 = torch.hub.load("pytorch/vision:` + commit + `", "resnet50")
sd = torch.load("w.pt")
sd2 = torch.load("w.pt", weights_only=True)
sd3 = torch.load(f, map_location="cpu", weights_only=False)
def from_pretrained(x): pass
s = "AutoModel.from_pretrained('not/code')"  # in a string: not a call
# AutoModel.from_pretrained("in/comment")
kw = AutoModel.from_pretrained("org/x", **opts)
sdu = torch.hub.load_state_dict_from_url("https://example.test/w.pth")
`
	checkCases(t, []tcase{
		{"hf and torch", "train.py", src, []string{
			"hf-revision@9", "trust-remote-code@11", "hf-revision@14", "hf-revision@15", "hf-revision@16",
			"hf-revision@18", "torch-hub-unpinned@20", "torch-load-unsafe@22", "torch-load-unsafe@24",
			"download-no-checksum@29",
		}},
		{"shebang python", "tools/fetch", "#!/usr/bin/env python3\nimport torch\ntorch.load('x')\n", []string{"torch-load-unsafe@3"}},
	})
}

func TestImageConfigAndApptainer(t *testing.T) {
	cfg := `{"architecture":"amd64","config":{"Env":["PATH=/usr/bin"],"Labels":{"org.opencontainers.image.base.name":"registry.example.com/library/ubuntu:22.04"}},
"history":[{"created_by":"/bin/sh -c #(nop) ADD file:abc in / "},
{"created_by":"RUN /bin/sh -c pip install --no-cache-dir torch # buildkit"},
{"created_by":"RUN |1 V=1 /bin/sh -c pip install numpy==1.26.4 # buildkit"},
{"created_by":"ENV X=1","empty_layer":true}]}`
	a := `Bootstrap: docker
From: registry.example.com/nvidia/pytorch:24.01-py3

%post
    pip install flash-attn
    curl -fsSL https://example.test/i.sh | sh

%runscript
    python train.py
`
	checkImageCfg(t, cfg)
	checkCases(t, []tcase{
		{"apptainer def", "train.def", a, []string{"image-not-digest@2", "pip-unpinned@5", "curl-pipe-shell@6"}},
	})
}

func TestNotebook(t *testing.T) {
	// The layout nbformat writes: one source line per JSON line, keys sorted.
	nb := `{
 "cells": [
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": [
    "!pip install not-code\n"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "metadata": {},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["torch.load('x')\n"]}],
   "source": [
    "!pip install transformers\n",
    "%pip install accelerate==0.30.1\n",
    "import torch\n",
    "m = AutoModel.from_pretrained(\"org/m\", trust_remote_code=True)\n",
    "os.system(\"curl -fsSL https://example.test/i.sh | bash\")\n",
    "subprocess.run([\"pip\", \"install\", \"vllm\"])"
   ]
  },
  {
   "cell_type": "code",
   "metadata": {},
   "source": "%%bash\nconda install -y numpy\n"
  }
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
`
	checkCases(t, []tcase{
		{"notebook", "explore.ipynb", nb, []string{
			"pip-unpinned@16", "hf-revision@19", "trust-remote-code@19", "curl-pipe-shell@20", "pip-unpinned@21", "conda-unpinned@27",
		}},
		{"truncated notebook", "x.ipynb", nb[:strings.Index(nb, "%pip")], []string{"pip-unpinned@16"}},
	})
}

// TestWorkflowExpressions: ${{ … }} in a run: script is not shell syntax;
// the script is still checked, and a value from an expression is a variable.
func TestWorkflowExpressions(t *testing.T) {
	wf := `on: push
jobs:
  release:
    runs-on: ubuntu-24.04
    steps:
      - run: |
          tag="${TAG#"release/v"}"
          echo "IMAGE_REF=${{ env.IMAGE_NO_TAG }}:$tag" >> $GITHUB_ENV
          export tag="${{ matrix.module }}/${REF_NAME}"
          pip install requests
`
	checkCases(t, []tcase{
		{"expressions in run", ".github/workflows/release.yml", wf, []string{"pip-unpinned@10"}},
	})
}
