package catalog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/source"
)

// makeTree writes the benchmark tree: n small text files (scripts,
// configs, Python) and bins binary files of binMB MiB each.
func makeTree(tb testing.TB, dir string, n, bins, binMB int) (textBytes int64) {
	tb.Helper()
	kinds := []struct{ name, body string }{
		{"train_%d.sh", "#!/bin/bash\nset -euo pipefail\nexport LR=3e-4\npython train.py --epochs 3 --lr $LR\n"},
		{"config_%d.yaml", "model:\n  name: resnet50\n  layers: [3, 4, 6, 3]\noptimizer: {name: adamw, lr: 0.0003}\n"},
		{"model_%d.py", "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"},
		{"notes_%d.md", "# Experiment\n\nBaseline run with the default schedule; see the dashboard.\n"},
	}
	for i := range n {
		k := kinds[i%len(kinds)]
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i%200), fmt.Sprintf(k.name, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(k.body), 0o644); err != nil {
			tb.Fatal(err)
		}
		textBytes += int64(len(k.body))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for i := range bins {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("blob_%d.bin", i)))
		if err != nil {
			tb.Fatal(err)
		}
		for range binMB {
			for j := range buf {
				buf[j] = byte(rng.Uint32())
			}
			buf[0] = 0 // binary from the first byte on
			if _, err := f.Write(buf); err != nil {
				tb.Fatal(err)
			}
		}
		f.Close()
	}
	return textBytes
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// BenchmarkPipeline scans the tree (20,000 small text files plus
// five 200 MiB binaries; MLWARDEN_BENCH_FILES and MLWARDEN_BENCH_BIN_MB
// shrink it) with every check, and reports files/s and MB/s.
func BenchmarkPipeline(b *testing.B) {
	n, binMB := envInt("MLWARDEN_BENCH_FILES", 20000), envInt("MLWARDEN_BENCH_BIN_MB", 200)
	dir := b.TempDir()
	textBytes := makeTree(b, dir, n, 5, binMB)
	scs, err := catalog.New(catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	total := textBytes + int64(5*binMB)<<20
	b.ResetTimer()
	for b.Loop() {
		src, err := source.OpenFS(dir, source.Options{})
		if err != nil {
			b.Fatal(err)
		}
		res := scanners.NewDispatcher(scs).Run(context.Background(), src)
		if len(res.Errors) > 0 {
			b.Fatal(res.Errors)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(n+5)/sec, "files/s")
	b.ReportMetric(float64(total)/1e6/sec, "MB/s")
	b.ReportMetric(float64(textBytes)/1e6/sec, "textMB/s")
}
