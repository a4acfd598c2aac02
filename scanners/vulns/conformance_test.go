package vulns

import (
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// TestConformance runs the checks every scanner passes on FuzzScan's seeds
// (a path and a content each) and the demo fixtures.
func TestConformance(t *testing.T) {
	var seeds []scannertest.Seed
	for _, in := range scannertest.FuzzInputs(t, "fuzz_test.go", "FuzzScan") {
		path, _ := in[0].(string)
		content, _ := in[1].(string)
		seeds = append(seeds, scannertest.Seed{Path: path, Data: []byte(content)})
	}
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	scannertest.Conformance(t, newScanner(t), seeds...)
}
