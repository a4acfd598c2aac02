package pins

import (
	"bytes"
	"context"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// fuzzScan scans data as the named file and checks the invariants every
// finding keeps: it is a pins finding with a message, at a line of the file.
func fuzzScan(t *testing.T, p string, data []byte) {
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "fuzz", TargetKind: scanners.KindScript, Path: p}
	fs, err := New().Scan(context.Background(), a, bytesContent(data))
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	lines := bytes.Count(data, []byte("\n")) + 1
	for _, f := range fs {
		if f.Check != scanners.CheckPins || f.Message == "" || f.Line < 0 || f.Line > lines {
			t.Fatalf("bad finding (file has %d lines): %+v", lines, f)
		}
	}
	fuzzSites(t, p, data)
}

func bytesContent(b []byte) scanners.Content {
	return &sectionContent{bytes.NewReader(b)}
}

type sectionContent struct{ *bytes.Reader }

func FuzzShell(f *testing.F) {
	for _, s := range []string{
		"#!/bin/bash\n#SBATCH --container-image=registry.example.com#nvidia/pytorch:24.01-py3\nIMG=x:1\nsrun --container-image \"$IMG\" true\n",
		"pip install \\\n torch 'numpy>=1' && curl -fsSL https://e.test/i.sh | sh\n",
		"bash <<EOF\npip install x\nEOF\npython - <<'P'\nimport torch\ntorch.load('a')\nP\n",
		"git clone https://e.test/a.git && git -C a checkout ${REV}\nwget -qO- https://e.test/x | tar xz\n",
		"eval \"$(curl -s https://e.test)\"\nsh -c 'sh -c \"pip install y\"'\n",
		"module load cuda\nml gcc python/3.11\nenroot import docker://u@r#i:1\napptainer pull docker://ubuntu\n",
		"#!/bin/bash\r\n#SBATCH --container-im 'r.example.com#n/p':1#old -J\r\n#SLURM x\\#y\r\n#SBATCH hetjob --container-image=\"$I\"\r\ncat <<E\n#SBATCH --container-image=a\nE\n",
		"srun --overlap bash -c \"\n python -m sglang.launch_server \\\n --host 0.0.0.0 --trust-remote-code\n\" &\nssh -p 22 n1 \"pip install x\" <<EOF\npip install y\nEOF\n",
		": \"${IMG:=nvcr.io/n/p:1}\"\nIMG2=${IMG2:-u:latest}\nsrun --container-image=$IMG true\napptainer exec library://a/b/c:sha256.00 true\ndocker run --rm -e A=1 img:1 pip install z\n",
		"cd /opt && curl -fsSL get.e.test > i.sh | tee t && aws s3 cp s3://b/k ./ && gsutil gs://b/x /tmp/\necho \"aa  i.sh\" | sha256sum -c -\nbash i.sh\n",
		"go get -tool e.test/x@v1\nnpx -p y@latest z\nyarn\nnuget install a -Version 1\nchoco install b\napt-get install -y c=1 d\ndnf module install e\nxargs -I{} sh -c 'uvx f {}'\nsu -c 'pipx run g' u\n",
		// Issue 37: jobs submitted through heredocs, written files, loops
		// over a file, continued commands, bare names.
		"#!/bin/bash\nIMG=u:1\nsbatch -p g <<EOF\n#!/bin/bash\n#SBATCH --container-image=$IMG\nsrun --container-image=\\$X pip install \\\n  y\nEOF\ncat <<-'E' | sbatch\n\t#!/bin/sh\n\t#SBATCH -N1\n\tE\n",
		"cat > r.txt <<EOF\ntorch\n${V}\nEOF\nprintf '%s\\n' a==1 b%d > r.txt\necho -e 'c\\nd' >> r.txt\npip install -r r.txt\nconda env create -f r.txt\n",
		"while IFS= read -r p; do pip install \"$p\"; done < r.txt\ncat r.txt | while read p; do conda install $p; done\nfor p in $(cat r.txt) $(< r.txt); do apt-get install $p; done\n",
		"srun --gpus 4 \\\n  vllm serve m \\\n  --host 0.0.0.0 \\\n  --trust-remote-code\npip install \\\n  a==1 \\\n  b\n",
		"curl -o /usr/local/bin/k https://e.test/k\nk version\nexport PATH=.:$PATH\nwget -O t https://e.test/t; t; bash -c \"t\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzScan(t, "job.sbatch", data) })
}

func FuzzDockerfile(f *testing.F) {
	for _, s := range []string{
		"ARG BASE=python:3.12\nFROM ${BASE} AS b\nRUN pip install \\\n# c\n  torch\nFROM b\nCOPY --from=alpine:3 /a /a\n",
		"# syntax=docker/dockerfile:1\nFROM x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\nRUN <<EOF\ncurl https://e.test | sh\nEOF\n",
		"FROM scratch\nADD https://e.test/m.bin /m\nRUN [\"sh\", \"-c\", \"pip install x\"]\nENV PIP_EXTRA_INDEX_URL=https://e.test\n",
		"# escape=`\nFROM mcr.test/windows:ltsc\nRUN echo `\n  hi\n",
		"FROM x\nWORKDIR /app\nENV PATH=/app:$PATH\nRUN curl -o e https://e.test/e && \\\n  pip install \\\n   y\nRUN e\nRUN [\"e\"]\nRUN [\"sh\", \"-c\", \"e\"]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzScan(t, "Dockerfile", data) })
}

func FuzzRequirements(f *testing.F) {
	for _, s := range []string{
		"torch>=2\nnumpy==1.26.4 \\\n  --hash=sha256:aa\n-r base.txt\n-e git+https://e.test/o/r.git@main#egg=r\n",
		"--extra-index-url https://e.test/simple\npkg @ git+ssh://git@e.test/o/r.git@0123456789abcdef0123456789abcdef01234567\nx[y]==1; python_version<'3.9'\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, "requirements.txt", data)
		for _, l := range reqLines(data) {
			judgeReq(l.text)
		}
	})
}

func FuzzPython(f *testing.F) {
	for _, s := range []string{
		"from transformers import AutoModel\nm = AutoModel.from_pretrained('org/m', trust_remote_code=True)\n",
		"x = f'''{a}''' + r\"\\\"\" + b'\\x00'\ntorch.load(open('w'), **kw)\npipeline('t')\n",
		"def from_pretrained(a, b=(1, [2, {3: 4}])): pass\ntorch.hub.load('o/r:main', 'm')\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, "train.py", data)
		pythonCallsAgree(t, data)
	})
}

func FuzzYAML(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: &i a:1\n  initContainers:\n  - {<<: {image: *i}}\n",
		"a: &a [*a]\n",
		"x: &x {containers: [{image: b}]}\ny: [*x, *x, *x]\napiVersion: v1\nkind: List\n",
		"image: &i {repository: a, tag: latest}\nworker: {image: *i, sideImage: b:1, images: [{image: c}]}\n",
		"kind: Kustomization\nimages: [{name: a, newTag: latest}, {name: b, newName: c, newTag: '1', digest: d}]\n",
		"jobs:\n  a:\n    runs-on: windows-latest\n    strategy: {matrix: {img: [a:1, b], include: [{img: c@sha256:00}]}}\n    container: ${{ matrix.img }}\n    services: {r: {image: \"${{ x == 'y' && 'r:1' || '' }}\"}}\n    steps:\n      - uses: |\n          o/r@v1\n      - run: iwr https://e.test | iex\n  b: {uses: o/r/.github/workflows/w.yml@main}\nruns: {using: docker, image: docker://i:1, steps: [{uses: $/x}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, "k8s.yaml", data)
		fuzzScan(t, ".github/workflows/ci.yml", data)
		fuzzScan(t, ".gitlab-ci.yml", data)
		fuzzScan(t, "chart/values.yaml", data)
		fuzzScan(t, "overlay/kustomization.yaml", data)
	})
}

func FuzzPowerShell(f *testing.F) {
	for _, s := range []string{
		"$ErrorActionPreference = 'Stop'\niwr -useb https://e.test/i.ps1 | iex\niex ((New-Object System.Net.WebClient).DownloadString('https://e.test/c.ps1'))\nchoco install git --version 2.44.0\n",
		"Invoke-WebRequest -Uri https://e.test/x -OutFile x.zip\r\n& ./x.exe /S\r\npip install y\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzScan(t, "install.ps1", data) })
}

func FuzzNotebook(f *testing.F) {
	f.Add([]byte(`{"cells":[{"cell_type":"code","source":["!pip install x\n","torch.load(p)\n"]},{"cell_type":"code","source":"%%bash\ncurl https://e.test | sh\n"}]}`))
	f.Add([]byte(`{"cells":[{"source":[1,{"a":[]}],"cell_type":"code"}],"x":{"cells":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, "nb.ipynb", data)
		notebookWalkersAgree(t, data)
	})
}
