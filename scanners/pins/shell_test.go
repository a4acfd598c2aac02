package pins

import (
	"slices"
	"strings"
	"testing"
)

func TestShell(t *testing.T) {
	checkCases(t, []tcase{
		{"pip forms", "setup.sh", "#!/bin/bash\npip install torch\npip3 install 'numpy>=1.26'\npython3 -m pip install \"scipy~=1.11\"\nuv pip install --system vllm==0.5.0\npython -m pip install -e .\npip install ./wheels/x-1.0-py3-none-any.whl\npip install -c constraints.txt transformers\n",
			[]string{"pip-unpinned@2", "pip-unpinned@3", "pip-unpinned@4", "requirements-not-in-target@8"}},
		{"quoted flags", "a.sh", "pip install \"--extra-index-url=https://pkgs.example.test/simple\" 'torch==2.3.0'\npip install '--require-hashes' foo\n",
			[]string{"pip-extra-index-url@1"}},
		{"vcs", "a.sh", "pip install git+https://example.test/o/r.git@main\npip install 'pkg @ git+https://example.test/o/r.git@0123456789abcdef0123456789abcdef01234567'\npip install git+ssh://git@example.test/o/r.git\n",
			[]string{"vcs-unpinned@1", "vcs-unpinned@3"}},
		{"variables resolved", "a.sh", "PKG=torch\nVER=\"==2.3.0\"\npip install ${PKG}${VER}\nIMG=registry.example.com/nvidia/pytorch:24.01-py3\napptainer pull docker://$IMG\nexport TAG=latest\nsingularity exec docker://ubuntu:$TAG true\n",
			[]string{"image-not-digest@5", "image-latest@7"}},
		{"unresolved variable skipped", "a.sh", "pip install \"$PKGS\"\n", nil},
		{"conda", "a.sh", "conda install -y -c conda-forge numpy scipy=1.11 'pandas>=2'\nmamba create -n x python=3.11 cudatoolkit\nmicromamba install -f env.yml\n",
			[]string{"conda-unpinned@1", "conda-unpinned@1", "conda-unpinned@2", "requirements-not-in-target@3"}},
		{"npm go", "a.sh", "npm install -g pyright\nnpm i -g typescript@5.4.5\nnpm install left-pad\ngo install golang.org/x/tools/gopls@latest\ngo install example.test/x@v1.2.3\n",
			[]string{"npm-global-unpinned@1", "npm-unpinned@3", "go-install-latest@4"}},
		{"curl pipe", "a.sh", "curl -fsSL https://example.test/install.sh | sh\nwget -qO- https://example.test/i.sh | sudo -E bash -\ncurl -fsSL https://example.test/x.tgz | tar xz\ncurl -s https://example.test/api | jq .\n",
			[]string{"curl-pipe-shell@1", "curl-pipe-shell@2", "download-no-checksum@3"}},
		{"process substitution", "a.sh", "bash <(curl -fsSL https://example.test/i.sh)\nsh -c \"$(wget -O- https://example.test/i.sh)\"\nsource <(curl -s https://example.test/env)\n",
			[]string{"curl-pipe-shell@1", "curl-pipe-shell@2", "curl-pipe-shell@3"}},
		{"download then execute", "a.sh", "curl -fsSLo /tmp/get.sh https://example.test/get.sh\nbash /tmp/get.sh\nwget https://example.test/miniconda.sh\nchmod +x miniconda.sh\n./miniconda.sh -b\n",
			[]string{"download-exec@2", "download-exec@5"}},
		{"download verified", "a.sh", "curl -fsSLo get.sh https://example.test/get.sh\necho \"abc  get.sh\" | sha256sum -c -\nbash get.sh\n", nil},
		{"weights without checksum", "a.sh", "wget https://example.test/ckpt/model.safetensors\ncurl -L -o data.tar.gz https://example.test/data.tar.gz\nsha256sum data.tar.gz\n",
			[]string{"download-no-checksum@1"}},
		{"git clone", "a.sh", "git clone https://example.test/o/a.git\ngit clone https://example.test/o/b.git bdir\ngit -C bdir checkout 0123456789abcdef0123456789abcdef01234567\ngit clone https://example.test/o/c\ncd c\ngit fetch origin 0123456789abcdef0123456789abcdef01234567\ngit checkout FETCH_HEAD\n",
			[]string{"git-clone-unpinned@1"}},
		{"continuation and heredoc", "a.sh", "pip install \\\n  --upgrade \\\n  accelerate\nbash <<'EOF'\npip install deepspeed\nEOF\npython - <<EOF\nimport torch\ntorch.load('x.pt')\nEOF\n",
			[]string{"pip-unpinned@3", "pip-unpinned@5", "torch-load-unsafe@9"}},
		{"sh -c string", "a.sh", "bash -c 'pip install wandb'\n", []string{"pip-unpinned@1"}},
		{"python -c string", "a.sh", "python3 -c 'import torch; torch.load(\"w.pt\")'\npython -c \"import os; os.system('pip install x')\"\n", []string{"torch-load-unsafe@1", "pip-unpinned@2"}},
		{"hf cli", "a.sh", "huggingface-cli download meta-llama/Llama-3-8B --local-dir /m\nhf download org/m --revision 0123456789abcdef0123456789abcdef01234567\nhf download org/m --revision main\n",
			[]string{"hf-revision@1", "hf-revision@3"}},
		{"docker pull", "a.sh", "docker pull registry.example.com/nvidia/tritonserver:24.01-py3\ndocker pull ubuntu@" + digest + "\n", []string{"image-not-digest@1"}},
		{"enroot", "a.sh", "enroot import docker://registry.example.com#nvidia/pytorch:24.01-py3\nenroot import 'docker://user@registry.example.com#nvidia/pytorch@" + digest + "'\n", []string{"image-not-digest@1"}},
		{"pip config extra index", "a.sh", "pip config set global.extra-index-url https://pkgs.example.test/simple\nexport UV_EXTRA_INDEX_URL=https://pkgs.example.test/simple\n",
			[]string{"pip-extra-index-url@1", "pip-extra-index-url@2"}},
	})
}

func TestSbatch(t *testing.T) {
	checkCases(t, []tcase{
		{"directives before first command only", "train.sbatch", "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --container-image=\"registry.example.com#nvidia/pytorch:24.01-py3\"\n\nmodule load cuda\nmodule load nccl/2.18.3\n#SBATCH --container-image=ubuntu\nsrun --container-image=/shared/images/pt.sqsh python train.py\n",
			[]string{"image-not-digest@3", "module-unversioned@5"}},
		{"srun images", "job.sh", "#!/bin/bash\n#SBATCH --gres=gpu:8\nIMG=registry.example.com#nvidia/nemo:24.05\nsrun --mpi=pmix --container-image \"$IMG\" --container-mounts=/data:/data python train.py\nsrun -N 2 --container-image=user@registry.example.com#nvidia/pytorch:sha256:" + digest[7:] + " true\nsrun --container-image=pytorch/pytorch pip install flash-attn\n",
			[]string{"image-not-digest@4", "image-latest@6", "pip-unpinned@6"}},
		{"ml", "job.sbatch", "#!/bin/bash\nml purge\nml gcc/12 python\nmodule add cudnn\n", []string{"module-unversioned@3", "module-unversioned@4"}},
		{"quoted directive", "x (sbatch options)", "#!/bin/sh\n#SBATCH \"--container-image=registry.example.com#nvidia/pytorch:24.01-py3\"\n", []string{"image-not-digest@2"}},
		{"no shebang", "stdin", "#SBATCH --container-image=ubuntu\nsrun true\n", []string{"image-latest@1"}},
		{"sbatch by content", "run", "#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04\necho hi\n", []string{"image-not-digest@2"}},
	})
}

// TestUnparsedLine: a script the parser refuses is reported at the line it
// stopped, for bash features it lacks as for syntax errors.
func TestUnparsedLine(t *testing.T) {
	checkCases(t, []tcase{
		{"zsh arithmetic", "t.sh", "#!/bin/bash\necho start\nx=$(( 1.5 * 2 ))\n", []string{"unparsed@3"}},
		{"syntax error", "t.sh", "#!/bin/bash\nif then\n", []string{"unparsed@2"}},
	})
}

// TestOtherLanguages: source code and documents are not read as Dockerfiles
// or job scripts because of their name or of a string they quote.
func TestOtherLanguages(t *testing.T) {
	checkCases(t, []tcase{
		{"go file named dockerfile", "scanners/pins/dockerfile.go", "package pins\n\n// global settings\nfunc f() {}\n", nil},
		{"go test quoting a job", "bench_test.go", "package pins\n\nvar job = `#!/bin/bash\n#SBATCH -N 1\npip install torch\n`\n", nil},
		{"markdown with a job", "README.md", "Submit it:\n\n#SBATCH -N 1\npip install torch\n", nil},
		{"Dockerfile variant", "Dockerfile.gpu", "FROM registry.example.test/cuda:12.4\n", []string{"image-not-digest@1"}},
	})
}

// lineStartsNaive is lineStarts byte by byte, as it once was.
func lineStartsNaive(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func TestLineStarts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"", []int{0}},
		{"a", []int{0}},
		{"\n", []int{0, 1}},
		{"a\nb", []int{0, 2}},
		{"a\n\n", []int{0, 2, 3}},
		{strings.Repeat("x", 300) + "\ny\n", []int{0, 301, 303}},
	} {
		if got := lineStarts([]byte(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("lineStarts(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzLineStarts(f *testing.F) {
	f.Add([]byte("a\n\nb\r\nc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := lineStarts(b), lineStartsNaive(b); !slices.Equal(got, want) {
			t.Fatalf("lineStarts(%q) = %v, want %v", b, got, want)
		}
	})
}
