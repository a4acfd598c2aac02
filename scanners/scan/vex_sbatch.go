//go:build mlwarden_sbatch

package scan

import (
	"errors"

	"github.com/mlwarden/mlwarden/scanners"
)

// The sbatch hook's build does not link the VEX reader (it needs
// CycloneDX's decoder, which the hook leaves out); sbatch takes no --vex.
type vexSet = *struct{}

func loadVEX(paths []string) (vexSet, error) {
	if len(paths) > 0 {
		return nil, errors.New("VEX documents are not read by the mlwarden-sbatch build")
	}
	return nil, nil
}

func applyVEX(vexSet, *scanners.Result) {}
