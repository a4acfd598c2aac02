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
	// Rewrite finds sites without a registry; each must be the text it names.
	if sites, _, err := imageSites(p, data); err == nil {
		for _, s := range sites {
			if s.start < 0 || s.end > len(data) || s.start > s.end || string(data[s.start:s.end]) != s.written+s.tail {
				t.Fatalf("site %+v does not match the file", s)
			}
		}
	}
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
	f.Fuzz(func(t *testing.T, data []byte) { fuzzScan(t, "train.py", data) })
}

func FuzzYAML(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: &i a:1\n  initContainers:\n  - {<<: {image: *i}}\n",
		"a: &a [*a]\n",
		"x: &x {containers: [{image: b}]}\ny: [*x, *x, *x]\napiVersion: v1\nkind: List\n",
		"image: &i {repository: a, tag: latest}\nworker: {image: *i, sideImage: b:1, images: [{image: c}]}\n",
		"kind: Kustomization\nimages: [{name: a, newTag: latest}, {name: b, newName: c, newTag: '1', digest: d}]\n",
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

func FuzzNotebook(f *testing.F) {
	f.Add([]byte(`{"cells":[{"cell_type":"code","source":["!pip install x\n","torch.load(p)\n"]},{"cell_type":"code","source":"%%bash\ncurl https://e.test | sh\n"}]}`))
	f.Add([]byte(`{"cells":[{"source":[1,{"a":[]}],"cell_type":"code"}],"x":{"cells":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzScan(t, "nb.ipynb", data) })
}
