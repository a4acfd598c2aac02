package cuda

import (
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// BenchmarkCheck20Pools is the in-process part of `mlwarden cuda check
// requirements.txt --inventory inventory-20.yaml`: load the table and the
// inventory, read the file, evaluate on every pool.
func BenchmarkCheck20Pools(b *testing.B) {
	req := "--extra-index-url https://pypi.example.com/whl/cu121\ntorch==2.4.0+cu121\nnumpy==1.26.4\n"
	for b.Loop() {
		s, err := New(WithInventory("../../fixtures/cuda/inventory-20.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		c := &Collector{}
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "requirements.txt"}
		if err := c.Artifact(a, strings.NewReader(req)); err != nil {
			b.Fatal(err)
		}
		if evs := s.EvaluateAll(c.Declared()); len(evs) != 20 {
			b.Fatalf("%d results", len(evs))
		}
	}
}
