package secrets

import (
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// TestConformance runs the checks every scanner passes on FuzzNotebook's
// seeds, FuzzDecodeGate's texts as source and env files, every rule case's
// positive and negative content (made at run time from fake values) and
// the demo fixtures.
func TestConformance(t *testing.T) {
	seeds := scannertest.FuzzFiles(t, "secrets_test.go", "FuzzNotebook", "nb.ipynb")
	seeds = append(seeds, scannertest.Files([]string{"nb.ipynb"}, []byte(notebook("hf_"+newFake(1).str(alnum, 34))))...)
	seeds = append(seeds, scannertest.FuzzFiles(t, "decodegate_test.go", "FuzzDecodeGate", "train.py", ".env")...)
	g := newFake(7)
	for _, rc := range ruleCases {
		pos, _ := rc.pos(g)
		seeds = append(seeds, scannertest.Seed{Path: rc.path, Data: []byte(pos)}, scannertest.Seed{Path: rc.path, Data: []byte(rc.neg(g))})
	}
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	scannertest.Conformance(t, newScanner(t), seeds...)
}
