package slurm

import (
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// TestConformance runs the checks every scanner passes on the parser's
// cases (FuzzParse's seeds) and the demo fixtures.
func TestConformance(t *testing.T) {
	var scripts [][]byte
	for _, tc := range parseCases {
		scripts = append(scripts, []byte(tc.script))
	}
	seeds := scannertest.Files([]string{"job.sbatch", "train.sh"}, scripts...)
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	scannertest.Conformance(t, New(), seeds...)
}
