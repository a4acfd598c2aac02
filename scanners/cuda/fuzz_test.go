package cuda

import "testing"

func FuzzExtractFile(f *testing.F) {
	for _, s := range []string{
		"torch==2.4.0+cu121\n--index-url https://pypi.example.com/whl/cu128\n",
		"dependencies:\n  - pytorch-cuda=12.1\n  - pip:\n    - torch==2.3.1+cu121\n",
		"#!/bin/bash\nmodule load gcc/12 cuda/12.4.1 CUDAcompat/11.7-515.65.01\nexport TORCH_CUDA_ARCH_LIST=\"8.0 9.0+PTX\"\n",
		"FROM nvidia/cuda:12.4.1-devel\nENV TORCH_CUDA_ARCH_LIST=9.0a\n",
	} {
		f.Add(s)
	}
	paths := []string{"requirements.txt", "environment.yml", "job.sbatch", "Dockerfile", "site-packages/torch/version.py", "uv.lock"}
	f.Fuzz(func(t *testing.T, data string) {
		tb := table(t)
		for _, p := range paths {
			d := ExtractFile(p, []byte(data))
			if d.CUDA != "" && !isVersion(d.CUDA) {
				t.Fatalf("%s: CUDA %q", p, d.CUDA)
			}
			_ = Evaluate(tb, d, "h", host("535.104.05", "8.0:tesla", "12.0:geforcertx"))
		}
		if d, err := ExtractImageConfig([]byte(data)); err == nil {
			_ = Evaluate(tb, d, "h", host("550.54.15", "9.0:nvidia"))
		}
		_, _ = ParseHost([]byte(data))
	})
}
