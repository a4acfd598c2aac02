package cuda

import (
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// TestConformance runs the checks every scanner passes, with the fixtures'
// node pools, on FuzzExtractFile's seeds scanned as the files it extracts
// from and on the cuda and demo fixtures.
func TestConformance(t *testing.T) {
	s, err := New(WithInventory("../../fixtures/cuda/inventory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seeds := scannertest.FuzzFiles(t, "fuzz_test.go", "FuzzExtractFile",
		"requirements.txt", "environment.yml", "job.sbatch", "Dockerfile", "site-packages/torch/version.py", "uv.lock")
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/cuda")...)
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	scannertest.Conformance(t, s, seeds...)
}
