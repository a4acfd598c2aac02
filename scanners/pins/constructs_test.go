package pins

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// The constructs of issue 22, each with cases that must be found at their
// line and cases that must not be.

func TestCommandsInStrings(t *testing.T) {
	checkCases(t, []tcase{
		{"bash -c", "a.sh", "bash -c 'pip install wandb'\nbash -c 'pip install wandb==0.17.0 --hash=sha256:aa --require-hashes'\n", []string{"pip-unpinned@1"}},
		{"sh -ec cluster", "a.sh", "sh -ec 'curl -fsSL https://e.test/i.sh | sh'\n", []string{"curl-pipe-shell@1"}},
		{"su -c", "a.sh", "su -c 'pip install wandb' builder\nsu builder -c \"npm install -g yarn\"\nsu - builder\n", []string{"pip-unpinned@1", "npm-global-unpinned@2"}},
		{"runuser -u", "a.sh", "runuser -u builder -- pip install wandb\n", []string{"pip-unpinned@1"}},
		{"srun bash -c multi-line", "job.sbatch", "#!/bin/bash\n#SBATCH -N1\nsrun bash -c \"\n  echo start\n  pip install wandb\n\"\n", []string{"pip-unpinned@5"}},
		{"srun sh -c after options", "job.sbatch", "#!/bin/bash\nsrun -N 2 --ntasks-per-node=1 sh -c 'go install example.test/x/cmd/y@latest'\n", []string{"go-install-latest@2"}},
		{"xargs sh -c", "a.sh", "cat list | xargs -I{} sh -c 'pip install wandb; echo {}'\n", []string{"pip-unpinned@1"}},
		{"xargs direct", "a.sh", "echo wandb | xargs -n1 pip install\n", nil},
		{"ssh host command", "a.sh", "ssh -p 2222 node01 \"curl -fsSL https://e.test/i.sh | bash\"\nssh node01 pip install wandb\nssh node01 uptime\n", []string{"curl-pipe-shell@1", "pip-unpinned@2"}},
		{"eval string", "a.sh", "eval \"pip install wandb\"\neval pip install accelerate\neval \"$CMD\"\n", []string{"pip-unpinned@1", "pip-unpinned@2"}},
		{"heredoc to ssh", "a.sh", "ssh node01 <<'EOF'\npip install wandb\nEOF\nssh node01 cat > out <<'EOF'\npip install nothing-run\nEOF\n", []string{"pip-unpinned@2"}},
		{"heredoc to srun bash", "job.sbatch", "#!/bin/bash\nsrun bash <<EOF\npip install wandb\nEOF\n", []string{"pip-unpinned@3"}},
		{"heredoc to cat is data", "a.sh", "cat > setup.sh <<'EOF'\npip install wandb\nEOF\n", nil},
		{"backgrounded multi-line string", "job.sbatch", "#!/bin/bash\n#SBATCH -N1\nsrun --overlap bash -c \"\n  python3 -m sglang.launch_server \\\n     --model-path Qwen/Qwen2-7B \\\n     --host 0.0.0.0 --trust-remote-code\n\" &\nwait\n",
			[]string{"trust-remote-code@6"}},
		{"continuation inside the string keeps lines", "a.sh", "bash -c \"echo a \\\n  b\npip install wandb\"\n", []string{"pip-unpinned@3"}},
		{"command substitution spanning lines", "a.sh", "bash -c \"x=$(date\n)\npip install wandb\"\n", []string{"pip-unpinned@3"}},
		{"srun --wrap", "a.sh", "sbatch --wrap 'pip install wandb'\n", []string{"pip-unpinned@1"}},
	})
}

func TestTrustRemoteCodeFlag(t *testing.T) {
	checkCases(t, []tcase{
		{"vllm serve", "a.sh", "vllm serve Qwen/Qwen2-7B --trust-remote-code\n", []string{"trust-remote-code@1"}},
		{"quoted srun vllm", "job.sbatch", "#!/bin/bash\nsrun --container-image=/img.sqsh bash -c \"python -m vllm.entrypoints.openai.api_server --model $M --host 0.0.0.0 --trust-remote-code\" &\n", []string{"trust-remote-code@2"}},
		{"lm_eval model_args", "a.sh", "lm_eval --model hf --model_args pretrained=org/m,trust_remote_code=True --tasks x\n", []string{"trust-remote-code@1"}},
		{"not set", "a.sh", "vllm serve Qwen/Qwen2-7B --trust-remote-code=false\nvllm serve org/m\necho --trust-remote-code-docs\n", nil},
	})
}

func TestGoCommands(t *testing.T) {
	checkCases(t, []tcase{
		{"unpinned", "a.sh", "go get example.test/o/r@latest\ngo get example.test/o/r\ngo run example.test/o/r/cmd/x@master arg\ngo get -tool example.test/o/t@main\ngo install example.test/o/r@v1\ngo install example.test/o/r@v1.2\ngo get -insecure example.test/o/r@v1.2.3\n",
			[]string{"go-install-latest@1", "go-install-latest@2", "go-install-latest@3", "go-install-latest@4", "go-install-latest@5", "go-install-latest@6", "go-install-latest@7"}},
		{"pinned", "a.sh", "go install example.test/o/r@v1.2.3\ngo get example.test/o/r@v1.2.3-rc.1+meta\ngo get example.test/o/r@v0.0.0-20240101000000-0123456789ab\ngo get example.test/o/r@0123456789abcdef0123456789abcdef01234567\ngo get example.test/o/r@none\ngo install example.test/o/r/cmd/x\ngo run ./cmd/x --flag example.test/o/r@latest\ngo get ./...\ngo install -ldflags '-s -w' example.test/o/r@v1.0.0\ngo get local-folder\n", nil},
	})
}

func TestDownloadsThenRun(t *testing.T) {
	checkCases(t, []tcase{
		{"tracked by path, not name", "a.sh", "wget -O /tmp/x https://e.test/x\n./x\n", nil},
		{"run by path", "a.sh", "wget -O /tmp/x https://e.test/x\n/tmp/x\n", []string{"download-exec@2"}},
		{"cd then relative", "a.sh", "cd /opt\ncurl -fsSLo get.sh https://e.test/get.sh\nbash /opt/get.sh\n", []string{"download-exec@3"}},
		{"other directory", "a.sh", "cd /opt\ncurl -fsSLo get.sh https://e.test/get.sh\ncd /srv\nbash get.sh\n", nil},
		{"redirect and append", "a.sh", "curl -fsSL https://e.test/i.sh > i.sh\nsh i.sh\ncurl -s https://e.test/j.sh >> j.sh\nbash ./j.sh\n", []string{"download-exec@2", "download-exec@4"}},
		{"tee", "a.sh", "curl -fsSL https://e.test/i.sh | tee /tmp/i.sh >/dev/null\nbash /tmp/i.sh\n", []string{"download-exec@2"}},
		{"output-document", "a.sh", "wget --output-document=/tmp/i.sh https://e.test/i.sh\nsource /tmp/i.sh\nwget -P /opt https://e.test/k.sh\nbash /opt/k.sh\n", []string{"download-exec@2", "download-exec@4"}},
		{"verified by an echoed sum of that path", "a.sh", "curl -fsSLo get.sh https://e.test/get.sh\necho \"0123abcd  get.sh\" | sha256sum -c -\nbash get.sh\n", nil},
		{"an echoed sum of another path", "a.sh", "curl -fsSLo get.sh https://e.test/get.sh\ncurl -fsSLo other.sh https://e.test/o.sh\necho \"0123abcd  other.sh\" | sha256sum -c -\nbash get.sh\n", []string{"download-exec@4"}},
		{"aws s3 cp", "a.sh", "aws s3 cp s3://bucket/tools/setup.sh /tmp/setup.sh\nbash /tmp/setup.sh\naws s3 cp s3://bucket/tools/run.sh ./\n./run.sh\n", []string{"download-exec@2", "download-exec@4"}},
		{"aws s3api get-object", "a.sh", "aws s3api get-object --bucket b --key tools/i.sh i.sh\nbash i.sh\n", []string{"download-exec@2"}},
		{"gsutil gcloud rclone azcopy", "a.sh", "gsutil cp gs://b/i.sh /tmp/a.sh\nbash /tmp/a.sh\ngcloud storage cp gs://b/j.sh /tmp/b.sh\nsh /tmp/b.sh\nrclone copy remote:tools/c.sh /tmp\nbash /tmp/c.sh\nazcopy copy 'https://acct.blob.core.windows.net/c/d.sh' /tmp/d.sh\nbash /tmp/d.sh\n",
			[]string{"download-exec@2", "download-exec@4", "download-exec@6", "download-exec@8"}},
		{"cloud copy up is not a download", "a.sh", "aws s3 cp ./run.sh s3://bucket/run.sh\nbash ./run.sh\n", nil},
		{"cloud data is not judged", "a.sh", "aws s3 cp s3://bucket/model.safetensors /data/model.safetensors\n", nil},
		{"hf download of a script", "a.sh", "hf download org/tools run.sh --local-dir /opt/t --revision 0123456789abcdef0123456789abcdef01234567\nbash /opt/t/run.sh\nhuggingface-cli download org/tools setup.sh --local-dir t\nbash t/setup.sh\n",
			[]string{"download-exec@4", "hf-revision@3"}},
		{"url without a scheme", "a.sh", "curl -fsSL get.example.test | sh\nwget -qO- example.test/i.sh | bash\n", []string{"curl-pipe-shell@1", "curl-pipe-shell@2"}},
		{"process substitution", "a.sh", "python <(curl -fsSL https://e.test/i.py)\nsource <(wget -qO- https://e.test/env)\n. <(curl -s https://e.test/env)\n", []string{"curl-pipe-shell@1", "curl-pipe-shell@2", "curl-pipe-shell@3"}},
		{"powershell in bash syntax", "a.sh", "iwr https://e.test/i.ps1 | iex\nInvoke-WebRequest -Uri https://e.test/i.ps1 -OutFile i.ps1\n", []string{"curl-pipe-shell@1"}},
	})
}

func TestPowerShell(t *testing.T) {
	checkCases(t, []tcase{
		{"iwr iex", "install.ps1", "$ErrorActionPreference = 'Stop'\niwr -useb https://e.test/install.ps1 | iex\nInvoke-RestMethod https://e.test/x.ps1 | Invoke-Expression\niex ((New-Object System.Net.WebClient).DownloadString('https://e.test/c.ps1'))\niex (irm https://e.test/d.ps1)\n",
			[]string{"curl-pipe-shell@2", "curl-pipe-shell@3", "curl-pipe-shell@4", "curl-pipe-shell@5"}},
		{"download to a file", "install.ps1", "Invoke-WebRequest -Uri https://e.test/i.zip -OutFile i.zip\nchoco install git --version 2.44.0\nchoco install nodejs\n", []string{"windows-package-unpinned@3"}},
	})
}

func TestPackageManagers(t *testing.T) {
	checkCases(t, []tcase{
		{"npm local", "a.sh", "npm install left-pad\nnpm i lodash@^4\nyarn add react\npnpm add vite@latest\nnpm install left-pad@1.3.0\nyarn add react@18.2.0\nnpm install ./local-pkg\n",
			[]string{"npm-unpinned@1", "npm-unpinned@2", "npm-unpinned@3", "npm-unpinned@4"}},
		{"npx", "a.sh", "npx prettier --write .\nnpx -y create-react-app@5.0.1 app\nnpx --package=typescript@latest tsc\nbunx cowsay hi\nnpm exec eslint\n",
			[]string{"npm-unpinned@1", "npm-unpinned@3", "npm-unpinned@4", "npm-unpinned@5"}},
		{"npm git", "a.sh", "npm install github:o/r#main\nnpm install github:o/r#0123456789abcdef0123456789abcdef01234567\n", []string{"npm-unpinned@1"}},
		{"npm install without the lock enforced", "a.sh", "npm install\nnpm ci\nyarn install\nyarn install --frozen-lockfile\nyarn --immutable\nnpm i\nnpm install -g\n",
			[]string{"npm-install-not-ci@1", "npm-install-not-ci@3", "npm-install-not-ci@6", "npm-install-not-ci@7"}},
		{"pip2 pipx uv tool uvx", "a.sh", "pip2 install requests\npip3.11 install rich\npipx install black\npipx install black==24.4.2\npipx run ruff check .\nuv tool install ruff\nuv tool install ruff==0.4.4\nuvx ruff@0.4.4 check\nuvx ruff check\nuvx --from 'black==24.4.2' black .\nuv tool run --from black black .\n",
			[]string{"pip-unpinned@1", "pip-unpinned@2", "pip-unpinned@3", "pip-unpinned@5", "pip-unpinned@6", "pip-unpinned@9", "pip-unpinned@11"}},
		{"uv pip install", "a.sh", "uv pip install torch\nuv pip install torch==2.3.0\n", []string{"pip-unpinned@1"}},
		{"conda env create from a file not in the target", "a.sh", "conda env create -f environment.yml\nmamba env update --file=env.yml\nmicromamba create -y -n x -f conda-lock.yml\nconda create -n x python=3.11\n",
			[]string{"requirements-not-in-target@1", "requirements-not-in-target@2", "requirements-not-in-target@3"}},
		{"os packages", "a.sh", "apt-get update && apt-get install -y --no-install-recommends git curl=7.88.1-10\napt install -y python3\napk add --no-cache bash=5.2.15-r5 tini\nyum install -y gcc make-4.3\ndnf install -y vim-enhanced\nmicrodnf install -y tar\nzypper -n in git\ngem install bundler\ngem install rake:13.0.6\ngem install rails -v 7.1.3\napt-get install -y ./pkg_1.0_amd64.deb\nzypper install git=2.43\n",
			[]string{"os-package-unpinned@1", "os-package-unpinned@2", "os-package-unpinned@3", "os-package-unpinned@4", "os-package-unpinned@5", "os-package-unpinned@6", "os-package-unpinned@7", "os-package-unpinned@8"}},
		{"hadolint forms", "a.sh", "npm install package-v1.2.3.tar.gz\nnpm install --loglevel verbose sax@0.1.1\ngem install bundler:2.0.1 -- --use-system-libraries true\ngem install bundler:2.0.1 --use-system-libraries true\nyum module install -y tomcat\ndnf module install -y nodejs:18\n",
			[]string{"os-package-unpinned@5"}},
		{"os packages pinned", "a.sh", "apt-get install -y git=1:2.39.2-1.1 curl=7.88.1-10\napk add bash=5.2.15-r5\ndnf install -y vim-enhanced-9.0.2153\napt-get update\napt-get remove git\n", nil},
		{"choco nuget dotnet", "a.sh", "choco install git\nchoco install --requirechecksum git\nchoco install git --version 2.44.0\nnuget install Newtonsoft.Json\nnuget install Newtonsoft.Json -Version 13.0.3\nnuget install packages.config\ndotnet add package Serilog\ndotnet add App.csproj package Serilog --version 3.1.1\ndotnet restore\ndotnet restore --locked-mode\nnuget restore -LockedMode\nmsbuild /t:restore\nmsbuild /t:restore /p:RestoreLockedMode=true\n",
			[]string{"windows-package-unpinned@1", "windows-package-unpinned@2", "windows-package-unpinned@4", "windows-package-unpinned@7", "windows-package-unpinned@9", "windows-package-unpinned@12"}},
	})
}

func TestContainersInScripts(t *testing.T) {
	checkCases(t, []tcase{
		{"apptainer URIs", "job.sbatch", "#!/bin/bash\napptainer pull docker://ubuntu:22.04\nsingularity exec oras://ghcr.io/o/img:1.0 python x.py\napptainer run library://sylabs/examples/lolcow:latest\napptainer pull library://sylabs/examples/lolcow:sha256." + strings.Repeat("a", 64) + "\napptainer exec shub://vsoch/hello-world python x.py\napptainer exec docker-archive:/data/img.tar true\napptainer exec /shared/img.sif true\napptainer exec docker://ubuntu@" + digest + " true\napptainer build out.sif docker://python\n",
			[]string{"image-not-digest@2", "image-not-digest@3", "image-latest@4", "image-not-digest@6", "image-latest@10"}},
		{"command inside apptainer exec", "a.sh", "apptainer exec --nv -B /data:/data /img.sif pip install wandb\n", []string{"pip-unpinned@1"}},
		{"variable defaults", "job.sbatch", "#!/bin/bash\nsrun --container-image=\"${IMG:-nvcr.io/nvidia/pytorch:24.01-py3}\" true\n: \"${IMG2:=nvcr.io/nvidia/nemo:24.05}\"\nsrun --container-image \"$IMG2\" true\nif [ -z \"$IMG3\" ]; then IMG3=ubuntu; fi\nsrun --container-image=$IMG3 true\nIMG4=${IMG4:-debian:12@" + digest + "}\nsrun --container-image=$IMG4 true\n",
			[]string{"image-not-digest@2", "image-not-digest@4", "image-latest@6"}},
		{"enroot podman docker", "a.sh", "enroot import docker://nvcr.io#nvidia/pytorch:24.01-py3\npodman pull ubuntu\ndocker run --rm --gpus all -v /d:/d -e X=1 nvcr.io/nvidia/pytorch:24.01-py3 python t.py\ndocker run -it --rm ubuntu@" + digest + " bash\npodman run --name x -p 8080:80 nginx\ndocker run --rm python:3.12 pip install wandb\n",
			[]string{"image-not-digest@1", "image-latest@2", "image-not-digest@3", "image-latest@5", "image-not-digest@6", "pip-unpinned@6"}},
	})
}

func TestModelDownloads(t *testing.T) {
	checkCases(t, []tcase{
		{"reported once with the fix", "a.sh", "wget -O /data/w.safetensors https://e.test/w.safetensors\npython train.py --weights /data/w.safetensors\n", []string{"download-no-checksum@1"}},
		{"cleared by a later check of that path", "a.sh", "curl -L -o /data/w.pt https://e.test/w.pt\necho \"$W_SHA  /data/w.pt\" | sha256sum -c\n", nil},
		{"hf download without revision, once", "a.sh", "hf download org/model model.safetensors --local-dir /m\n", []string{"hf-revision@1"}},
		{"hf download pinned", "a.sh", "hf download org/model --revision 0123456789abcdef0123456789abcdef01234567 --local-dir /m\n", nil},
	})
}

func TestGitHubActionsConstructs(t *testing.T) {
	wf := `on: push
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - uses: |
          actions/checkout@` + commit + `
      - uses: $/.github/actions/hello
      - uses: ./.github/actions/local
      - uses: actions/setup-go@v5
  cond:
    runs-on: ubuntu-latest
    services:
      redis:
        image: ${{ inputs.use-redis == 'true' && 'redis@sha256:0123' || '' }}
      pg:
        image: ${{ inputs.use-pg == 'true' && 'postgres:16' || '' }}
      other:
        image: ${{ inputs.image || vars.DEFAULT_IMAGE }}
    steps: [{run: "true"}]
  matrix:
    runs-on: ubuntu-latest
    container:
      image: ${{ matrix.image }}
    strategy:
      matrix:
        image: ["ubuntu:24.04", "ubuntu@` + digest + `"]
        include:
          - image: debian
          - other: x
    steps: [{run: "true"}]
  empty:
    runs-on: ubuntu-latest
    container: ${{ matrix.container }}
    strategy:
      matrix:
        container: ['']
        include:
          - container: python
    steps: [{run: "true"}]
  reuse:
    uses: org/repo/.github/workflows/build.yml@v1
  reuse-local:
    uses: ./.github/workflows/local.yml
  win:
    runs-on: windows-latest
    steps:
      - run: iwr https://e.test/i.ps1 | iex
      - shell: bash
        run: curl -fsSL https://e.test/i.sh | bash
      - shell: cmd
        run: curl -fsSL https://e.test/i.sh | bash
`
	action := `name: docker action
runs:
  using: docker
  image: docker://ghcr.io/o/linter:slim-v8.5.0
`
	localAction := `runs:
  using: docker
  image: Dockerfile
`
	composite := `runs:
  using: composite
  steps:
    - uses: asdf-vm/actions/setup@v3
    - uses: actions/cache@` + commit + `
    - run: pip install wandb
      shell: bash
`
	checkCases(t, []tcase{
		{"workflow", ".github/workflows/ci.yml", wf, []string{
			"action-not-sha@10",
			"image-not-digest@17", "image-variable@19",
			"image-not-digest@27", "image-latest@29",
			"image-latest@39",
			"action-not-sha@42",
			"curl-pipe-shell@48", "curl-pipe-shell@50",
		}},
		{"docker action", "action.yml", action, []string{"image-not-digest@4"}},
		{"local docker action", "sub/action.yaml", localAction, nil},
		{"composite action", "action.yml", composite, []string{"action-not-sha@4", "pip-unpinned@6"}},
	})
}

// TestDeepNesting: a script nested deeper than the parser can take is
// reported as unparsed, not a crash, also inside an sh -c string.
func TestDeepNesting(t *testing.T) {
	deep := strings.Repeat("$(", 600) + strings.Repeat(")", 600)
	checkCases(t, []tcase{
		{"file", "a.sh", "echo " + deep + "\n", []string{"unparsed@0"}},
		{"string", "a.sh", "bash -c 'echo " + deep + "'\n", []string{"unparsed@0"}},
	})
}

// TestScorecardForms: forms from Scorecard's test data that mlwarden
// judges as Scorecard does.
func TestScorecardForms(t *testing.T) {
	checkCases(t, []tcase{
		{"a file at a commit is pinned", "a.sh", "curl -sSL https://raw.githubusercontent.com/o/r/" + commit + "/install.sh | bash\ncurl -sSL https://raw.githubusercontent.com/o/r/main/install.sh | bash\nbash <(curl -s https://github.com/o/r/raw/" + commit + "/i.sh)\n", []string{"curl-pipe-shell@2"}},
		{"a digest from a variable is a digest", "Dockerfile", "ARG HASH\nFROM pk@sha256:${HASH} AS base\nFROM python@sha256:$HASH\n", nil},
		{"svn and bzr refs are not hashes", "a.sh", "pip install --no-deps -e svn+https://e.test/r@" + commit + "#egg=p\npip install --no-deps -e hg+https://e.test/r@" + commit + "#egg=p\n", []string{"vcs-unpinned@1"}},
		{"gsutil without cp, s3api into a directory", "a.sh", "gsutil gs://b/exe /tmp/exe1 && /tmp/exe1\naws s3api get-object --bucket b --key dir/run.sh /opt/ && bash /opt/run.sh\n", []string{"download-exec@1", "download-exec@2"}},
		{"curl with its URL in its config", "a.sh", "curl > /tmp/file && bash /tmp/file\ncurl -K cfg | sh\n", []string{"download-exec@1", "curl-pipe-shell@2"}},
		{"a bare name runs the file downloaded here", "a.sh", "aws s3api get-object --bucket b --key dir/exe . && exe\n", []string{"download-exec@1"}},
	})
}

// TestRequirementFilesInTarget: a file a script installs from is judged
// where it is when the target holds it, and reported when it does not.
func TestRequirementFilesInTarget(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "jobs"), 0o755)
	os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte("torch\n"), 0o644)                    // its own artifact
	os.WriteFile(filepath.Join(dir, "jobs", "deps.pip"), []byte("numpy>=1\n"), 0o644)                 // judged from the script
	os.WriteFile(filepath.Join(dir, "jobs", "env.yaml"), []byte("dependencies:\n  - scipy\n"), 0o644) // a conda file, judged from the script
	script := "#!/bin/bash\npip install -r /workspace/requirements.txt\npip install -r deps.pip\nconda env create -f env.yaml\npip install -r missing.txt\npip install --require-hashes -r missing.txt\n"
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: dir, TargetKind: scanners.KindDir, Path: "jobs/train.sh", FS: openRoot(t, dir)}
	got := findingPaths(t, a, []byte(script))
	want := []string{"jobs/deps.pip:pins/pip-unpinned", "jobs/env.yaml:pins/conda-unpinned", "jobs/train.sh:pins/requirements-not-in-target"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
