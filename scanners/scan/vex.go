//go:build !mlwarden_sbatch

package scan

import (
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/vex"
)

// vexSet is the statements of --vex documents. The sbatch hook's build
// does not link the VEX reader (CycloneDX's decoder): see vex_sbatch.go.
type vexSet = *vex.Set

func loadVEX(paths []string) (vexSet, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	return vex.Load(paths)
}

// applyVEX suppresses the vulns findings the statements cover, after the
// other suppressions (a finding already suppressed keeps its reason).
func applyVEX(s vexSet, res *scanners.Result) { s.Apply(res) }
