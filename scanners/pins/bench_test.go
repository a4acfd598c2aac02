package pins

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// benchFiles generates n files of the kinds the pins check reads, in the
// proportions of a typical ML repository: sbatch scripts, Dockerfiles,
// Kubernetes YAML, requirements files and Python.
func benchFiles(n int) map[string][]byte {
	out := make(map[string][]byte, n)
	for i := range n {
		dir := fmt.Sprintf("team%02d/proj%03d", i%37, i%211)
		switch i % 20 {
		case 0, 1, 2, 3, 4, 5, 6:
			out[fmt.Sprintf("%s/job%05d.sbatch", dir, i)] = fmt.Appendf(nil, `#!/bin/bash
#SBATCH --job-name=train-%[1]d
#SBATCH --nodes=%[2]d
#SBATCH --gres=gpu:8
#SBATCH --time=24:00:00
#SBATCH --container-image=registry.example.com#nvidia/pytorch:24.%02[3]d-py3
#SBATCH --container-mounts=/data:/data
set -euo pipefail
module load cuda/12.%[3]d nccl
export NCCL_DEBUG=INFO
IMG=registry.example.com#nvidia/nemo:24.%02[3]d
VENV=/scratch/$USER/venv-%[1]d
python -m venv "$VENV" && source "$VENV/bin/activate"
pip install --upgrade pip
pip install \
    torch==2.%[3]d.0 \
    "transformers>=4.40" \
    accelerate
if [ ! -d apex ]; then
  git clone https://example.test/nvidia/apex.git
fi
wget -q https://example.test/ckpt/model-%[1]d.safetensors -O /data/m%[1]d.safetensors
srun --container-image "$IMG" --container-mounts=/data:/data \
    python train.py --config configs/run%[1]d.yaml --nodes %[2]d
echo done
`, i, 1+i%8, i%12)
		case 7, 8, 9, 10, 11:
			out[fmt.Sprintf("%s/Dockerfile.%05d", dir, i)] = fmt.Appendf(nil, `# syntax=docker/dockerfile:1
ARG BASE=registry.example.com/nvidia/pytorch:24.%02[2]d-py3
FROM ${BASE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update && \
    apt-get install -y --no-install-recommends git curl && \
    rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt && \
    pip install flash-attn==2.5.%[2]d --no-build-isolation
RUN <<EOF
set -e
curl -fsSL https://example.test/install-%[1]d.sh | bash
git clone --depth 1 https://example.test/o/kernels.git && git -C kernels checkout 0123456789abcdef0123456789abcdef01234567
EOF
COPY . .
FROM python:3.11-slim@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
COPY --from=build /src /app
ENTRYPOINT ["python", "/app/serve.py"]
`, i, i%12)
		case 12, 13, 14, 15, 16:
			out[fmt.Sprintf("%s/k8s/job-%05d.yaml", dir, i)] = fmt.Appendf(nil, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train-%[1]d
  labels: {team: t%[2]d}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          initContainers:
            - name: fetch
              image: busybox
              command: ["sh", "-c", "echo fetch"]
          containers:
            - name: pytorch
              image: &img registry.example.test/train/model-%[1]d:v%[2]d
              resources: {limits: {nvidia.com/gpu: 8}}
    Worker:
      replicas: %[2]d
      template:
        spec:
          containers:
            - name: pytorch
              image: *img
---
apiVersion: v1
kind: Service
metadata: {name: train-%[1]d}
spec:
  ports: [{port: 29500}]
`, i, 1+i%7)
		case 17, 18:
			out[fmt.Sprintf("%s/requirements-%05d.txt", dir, i)] = fmt.Appendf(nil, "# generated %d\ntorch==2.3.%d\nnumpy>=1.26\ntransformers~=4.41\ndatasets\n--extra-index-url https://pkgs.example.test/simple\ngit+https://example.test/o/lib.git@main\n", i, i%5)
		default:
			out[fmt.Sprintf("%s/train_%05d.py", dir, i)] = fmt.Appendf(nil, `import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

MODEL = "org/model-%[1]d"


def main():
    tok = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForCausalLM.from_pretrained(MODEL, trust_remote_code=True, torch_dtype=torch.bfloat16)
    state = torch.load("ckpt/%[1]d.pt", map_location="cpu")
    model.load_state_dict(state)


if __name__ == "__main__":
    main()
`, i)
		}
	}
	return out
}

// BenchmarkScanTree scans 10,000 generated files through Wants and Scan, as
// the dispatcher does, on one goroutine; files/s is reported as a metric.
func BenchmarkScanTree(b *testing.B) {
	files := benchFiles(10000)
	s := New()
	ctx := context.Background()
	var total int
	for b.Loop() {
		for p, data := range files {
			a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "bench", TargetKind: scanners.KindScript, Path: p}
			fs, err := scanners.ScanBytes(ctx, s, a, data)
			if err != nil {
				b.Fatal(err)
			}
			total += len(fs)
		}
	}
	b.ReportMetric(float64(len(files)*b.N)/b.Elapsed().Seconds(), "files/s")
	b.ReportMetric(float64(total)/float64(b.N), "findings/op")
}

// TestWriteBenchTree writes the generated tree to $MLWARDEN_PINS_BENCH_TREE
// for timing the CLI (mlwarden scan --checks pins DIR); without the
// variable it does nothing.
func TestWriteBenchTree(t *testing.T) {
	dir := os.Getenv("MLWARDEN_PINS_BENCH_TREE")
	if dir == "" {
		t.Skip("set MLWARDEN_PINS_BENCH_TREE=DIR to write the 10,000-file benchmark tree")
	}
	for p, data := range benchFiles(10000) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkScanSbatch scans one generated 25-line sbatch script.
func BenchmarkScanSbatch(b *testing.B) {
	var name string
	var data []byte
	for p, d := range benchFiles(1) {
		name, data = p, d
	}
	s := New()
	for b.Loop() {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "bench", TargetKind: scanners.KindScript, Path: name}
		if _, err := scanners.ScanBytes(context.Background(), s, a, data); err != nil {
			b.Fatal(err)
		}
	}
}

// pyBenchFiles is issue 21's ML tree's kind of Python (bench/imagelayout's
// code files): n files of 4–64 KiB of identifiers, keywords, calls, dots
// and assignments, with a string literal now and then, deterministic.
func pyBenchFiles(n int) [][]byte {
	words := strings.Fields("import from def class return self model config tensor train loss optimizer step batch epoch data loader token mask attention hidden layer weight bias norm dropout lambda yield with as if elif else for while try except finally in not and or None True False torch numpy np os sys json yaml logging logger path device cuda float32 load state_dict checkpoint")
	r := rand.New(rand.NewPCG(21, 1))
	out := make([][]byte, n)
	for i := range out {
		var b bytes.Buffer
		size := 4<<10 + r.IntN(60<<10)
		for b.Len() < size {
			b.WriteString(strings.Repeat(" ", r.IntN(3)*4))
			for k := range 3 + r.IntN(9) {
				if k > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[r.IntN(len(words))])
				switch r.IntN(14) {
				case 0:
					b.WriteString("(")
				case 1:
					b.WriteString(") =")
				case 2:
					fmt.Fprintf(&b, "_%d", r.IntN(100))
				case 3:
					b.WriteString(".")
				case 4:
					fmt.Fprintf(&b, " = %q", words[r.IntN(len(words))])
				}
			}
			b.WriteByte('\n')
		}
		out[i] = b.Bytes()
	}
	return out
}

// BenchmarkPython is the pins check's Python pass over 700 such files
// (≈ 24 MB, as the ML tree of bench/imagelayout holds), on one goroutine.
func BenchmarkPython(b *testing.B) {
	files := pyBenchFiles(700)
	n := 0
	for _, f := range files {
		n += len(f)
	}
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "bench", Path: "train.py"}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, f := range files {
			scanPython(f, &rep{s: &sink{a: a, seen: map[string]bool{}}})
		}
	}
}
