package cuda

import (
	"context"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// BenchmarkCheck20Pools is the in-process part of `mlwarden cuda check
// requirements.txt --inventory inventory-20.yaml`: load the table and the
// inventory, read the file, evaluate on every pool.
func BenchmarkCheck20Pools(b *testing.B) {
	ctx := context.Background()
	req := []byte("--extra-index-url https://pypi.example.com/whl/cu121\ntorch==2.4.0+cu121\nnumpy==1.26.4\n")
	for b.Loop() {
		s, err := New(WithInventory("../../fixtures/cuda/inventory-20.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		c := s.PerTarget(nil)
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: "requirements.txt"}
		if _, err := scanners.ScanBytes(ctx, c, a, req); err != nil {
			b.Fatal(err)
		}
		if _, err := c.FinishTarget(ctx, scanners.Target{Name: "t"}); err != nil {
			b.Fatal(err)
		}
		if vs := c.Verdicts(); len(vs) != 1 || len(vs[0].Evaluations) != 20 {
			b.Fatalf("%d results", len(vs))
		}
	}
}
