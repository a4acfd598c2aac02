package cuda

import (
	"context"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestExtractFile(t *testing.T) {
	tests := []struct {
		name       string
		path, text string
		cuda       string
		undeclared int
		compat     []string
		arch       string
		noPTX      bool
	}{
		{"torch +cu121", "requirements.txt", "torch==2.4.0+cu121\nnumpy==1.26\n", "12.1", 0, nil, "", true},
		{"torchvision +cu118 with comment", "requirements-gpu.txt", "torchvision==0.16.0+cu118  # gpu\n", "11.8", 0, nil, "", false},
		{"index url", "requirements.txt", "--index-url https://pypi.example.com/whl/cu128\ntorch==2.7.0\n", "12.8", 0, nil, "", true},
		{"extra index url cu130", "requirements.txt", "--extra-index-url=https://pypi.example.com/whl/cu130\ntorch\n", "13.0", 0, nil, "", true},
		{"plain torch is undeclared", "requirements.txt", "torch==2.5.1\n", "", 1, nil, "", false},
		{"nvidia runtime cu12", "requirements.txt", "nvidia-cuda-runtime-cu12==12.4.127\ntorch==2.5.1\n", "12.4", 0, nil, "", false},
		{"unsuffixed CUDA 13 runtime", "requirements.lock.txt", "nvidia-cuda-runtime==13.0.96\n", "13.0", 0, nil, "", false},
		{"cuda-toolkit with extras", "requirements.txt", "cuda-toolkit[cublas,cudart]==13.0.2\n", "13.0", 0, nil, "", false},
		{"cublas numbering is ignored", "requirements.txt", "nvidia-cublas==13.1.0.3\n", "", 0, nil, "", false},
		{"highest wins", "requirements.txt", "torch==2.4.0+cu118\nnvidia-cuda-runtime-cu12==12.1.105\n", "12.1", 0, nil, "", true},
		{"commented out", "requirements.txt", "# torch==2.4.0+cu121\n", "", 0, nil, "", false},
		{"conda pytorch-cuda", "environment.yml", "dependencies:\n  - pytorch=2.1\n  - pytorch-cuda=12.1\n", "12.1", 0, nil, "", false},
		{"conda cudatoolkit", "environment.yaml", "dependencies:\n  - cudatoolkit=11.8\n", "11.8", 0, nil, "", false},
		{"conda cuda-version with channel", "conda-env.yml", "dependencies:\n  - conda-forge::cuda-version>=12.4,<13\n", "12.4", 0, nil, "", false},
		{"conda pip section", "environment.yml", "dependencies:\n  - pip:\n    - torch==2.3.1+cu121\n", "12.1", 0, nil, "", true},
		{"conda pytorch undeclared", "environment.yml", "dependencies:\n  - pytorch\n", "", 1, nil, "", false},
		{"module load", "train.sbatch", "#!/bin/bash\n#SBATCH --gres=gpu:1\nmodule load gcc/12 cuda/12.4.1\n", "12.4", 0, nil, "", false},
		{"sbatch --export arch list", "train.sbatch", "#!/bin/bash\n#SBATCH --export=ALL,TORCH_CUDA_ARCH_LIST=9.0\nsrun true\n#SBATCH --export=TORCH_CUDA_ARCH_LIST=8.0\n", "", 0, nil, "9.0", false},
		{"sbatch directive is not a module load", "train.sbatch", "#!/bin/bash\n#SBATCH --comment=\"module load cuda/11.8\"\nsrun true\n", "", 0, nil, "", false},
		{"ml easybuild", "job.sh", "ml CUDA/12.1.1\n", "12.1", 0, nil, "", false},
		{"module load unversioned", "job.sh", "module load cuda\n", "", 1, nil, "", false},
		{"module cudnn is not cuda", "job.sh", "module load cudnn/8.9\n", "", 0, nil, "", false},
		{"EasyBuild CUDAcompat", "job.sh", "module load CUDAcompat/11.7-515.65.01\n", "11.7", 0, []string{"515.65.01"}, "", false},
		{"shebang script", "run", "#!/usr/bin/env bash\nmodule add cuda/11.8\n", "11.8", 0, nil, "", false},
		{"arch list export", "build.sh", "export TORCH_CUDA_ARCH_LIST=\"8.0 9.0+PTX\"\n", "", 0, nil, "8.0 9.0+PTX", false},
		{"dockerfile FROM and ENV arch", "Dockerfile", "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nENV TORCH_CUDA_ARCH_LIST=\"8.0;9.0a;10.0f\"\n", "12.4", 0, nil, "8.0;9.0a;10.0f", false},
		{"torch version.py", "/usr/lib/python3/site-packages/torch/version.py", "__version__ = '2.4.0+cu121'\ndebug = False\ncuda: Optional[str] = '12.1'\n", "12.1", 0, nil, "", true},
		{"torch version.py CPU", "/opt/venv/lib/python3.11/site-packages/torch/version.py", "cuda: Optional[str] = None\n", "", 0, nil, "", false},
		{"dist-info", "/usr/local/lib/python3.10/dist-packages/torch-2.4.0+cu124.dist-info/METADATA", "", "12.4", 0, nil, "", true},
		{"compat lib", "/usr/local/cuda-12.4/compat/libcuda.so.550.54.15", "", "", 0, []string{"550.54.15"}, "", false},
		{"compat lib relative", "usr/local/cuda/compat/libcuda.so.580.65.06", "", "", 0, []string{"580.65.06"}, "", false},
		{"not a compat lib", "/usr/local/cuda/lib64/libcudart.so.12.4.127", "", "", 0, nil, "", false},
		{"uv.lock", "uv.lock", "[[package]]\nname = \"torch\"\nversion = \"2.7.0+cu128\"\nsource = { registry = \"https://pypi.example.com/whl/cu128\" }\n", "12.8", 0, nil, "", true},
		{"poetry.lock runtime", "poetry.lock", "[[package]]\nname = \"nvidia-cuda-runtime-cu12\"\nversion = \"12.4.127\"\n", "12.4", 0, nil, "", false},
		{"Pipfile.lock", "Pipfile.lock", "{\"default\": {\"torch\": {\"version\": \"==2.4.0+cu121\"}}}\n", "12.1", 0, nil, "", true},
		{"pyproject", "pyproject.toml", "[project]\ndependencies = [\n  \"cuda-toolkit[cudart]==13.0.2\",\n  \"numpy\",\n]\n", "13.0", 0, nil, "", false},
		{"other text file", "README.md", "torch==2.4.0+cu121", "", 0, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var data []byte
			if tt.text != "" {
				data = []byte(tt.text)
			}
			d := ExtractFile(tt.path, data)
			arch := ""
			if d.Arch != nil {
				arch = d.Arch.Raw
			}
			if d.CUDA != tt.cuda || len(d.Undeclared) != tt.undeclared || strings.Join(d.CompatDrivers, ",") != strings.Join(tt.compat, ",") || arch != tt.arch || d.NoPTX != tt.noPTX {
				t.Errorf("got cuda %q undeclared %d compat %v arch %q noPTX %v; evidence %+v", d.CUDA, len(d.Undeclared), d.CompatDrivers, arch, d.NoPTX, d.Evidence)
			}
		})
	}
}

func TestExtractImageConfig(t *testing.T) {
	cfg := `{"architecture":"amd64","config":{"Env":["PATH=/usr/bin","CUDA_VERSION=12.4.1","NVIDIA_REQUIRE_CUDA=cuda>=12.4 brand=tesla,driver>=535,driver<536","NVIDIA_REQUIRE_JETPACK=x","TORCH_CUDA_ARCH_LIST=8.0 9.0"]}}`
	d, err := ExtractImageConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if d.CUDA != "12.4" || d.Env == nil || len(d.Env.Requirements) != 1 || d.Arch == nil || len(d.Arch.Targets) != 2 {
		t.Fatalf("got %+v", d)
	}
	if _, err := ExtractImageConfig([]byte("{")); err == nil {
		t.Error("broken config: no error")
	}
	d, _ = ExtractImageConfig([]byte(`{"config":{"Env":["NVIDIA_REQUIRE_CUDA=cuda>=11.8"]}}`))
	if d.CUDA != "11.8" {
		t.Errorf("CUDA from requirement = %q", d.CUDA)
	}
	d, _ = ExtractImageConfig([]byte(`{"config":{"Env":["PATH=/bin"]}}`))
	if !d.Empty() {
		t.Errorf("plain image declares %+v", d)
	}
}

func TestArchListRuns(t *testing.T) {
	l := ParseArchList("7.5;8.0 8.6 9.0a 10.0f 12.0+PTX Ampere")
	if len(l.Unknown) != 1 {
		t.Errorf("unknown = %v", l.Unknown)
	}
	for cc, want := range map[string][2]bool{
		"7.5": {true, false}, "8.0": {true, false}, "8.9": {true, false}, "9.0": {true, false},
		"10.0": {true, false}, "10.3": {true, false}, "12.0": {true, false}, "12.1": {true, false},
		"13.0": {true, true}, "7.0": {false, false}, "11.0": {false, false},
	} {
		runs, ptx := l.Runs(cc)
		if runs != want[0] || ptx != want[1] {
			t.Errorf("Runs(%s) = %v, %v; want %v", cc, runs, ptx, want)
		}
	}
}

func TestScannerFindings(t *testing.T) {
	ctx := context.Background()
	req := []byte("torch==2.4.0+cu121\n")
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: "requirements.txt"}

	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := scanners.ScanBytes(ctx, s, a, req)
	if err != nil || len(fs) != 1 || fs[0].RuleID != RuleNoHostFacts || fs[0].Line != 1 {
		t.Fatalf("no host facts: %+v %v", fs, err)
	}

	s, err = New(WithDriver("470.82.01"), WithGPUs(GPU{ComputeCapability: "8.0", Brand: "tesla"}))
	if err != nil {
		t.Fatal(err)
	}
	fs, _ = scanners.ScanBytes(ctx, s, a, req)
	if len(fs) != 1 || fs[0].RuleID != RuleIncompatible || fs[0].Severity != scanners.SeverityHigh {
		t.Fatalf("incompatible: %+v", fs)
	}
	for _, want := range []string{"requirements.txt", "CUDA 12.1", "470.82.01", "Fix:"} {
		if !strings.Contains(fs[0].Message, want) {
			t.Errorf("message %q lacks %q", fs[0].Message, want)
		}
	}

	fs, _ = scanners.ScanBytes(ctx, s, &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: "job.sh"}, []byte("module load cuda\n"))
	if len(fs) != 1 || fs[0].RuleID != RuleUndeclared || fs[0].Severity != scanners.SeverityInfo {
		t.Fatalf("undeclared: %+v", fs)
	}
	if s.Wants(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: "model.bin"}, []byte{0, 1}) {
		t.Error("wants a model file")
	}
	ids := map[string]bool{}
	for _, r := range s.Rules() {
		ids[r.ID] = true
		if r.Check != scanners.CheckCUDA || r.Fix == "" || r.Why == "" {
			t.Errorf("rule %+v incomplete", r)
		}
	}
	for _, id := range []string{RuleIncompatible, RuleForwardCompatRequired, RuleArchUnsupported, RuleRequirementInvalid, RuleUndeclared, RuleNoHostFacts} {
		if !ids[id] {
			t.Errorf("rule %s missing", id)
		}
	}
}

func TestLocalHostProbeFallback(t *testing.T) {
	s, err := New(WithLocalHost())
	if err != nil {
		t.Fatal(err)
	}
	// No GPU here: the probe fails and the scanner says why.
	if len(s.Pools()) == 0 && !strings.HasPrefix(s.HostNote(), "no host facts") {
		t.Errorf("host note %q", s.HostNote())
	}
	c := config{local: true, probe: func(context.Context) (HostFacts, error) { return host("550.54.15", "9.0:nvidia"), nil }}
	pools, note, err := c.resolveHosts(context.Background())
	if err != nil || len(pools) != 1 || note != "" {
		t.Errorf("probe: %v %q %v", pools, note, err)
	}
}
