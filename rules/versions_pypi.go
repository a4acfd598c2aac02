//go:build !mlwarden_sbatch

package rules

import (
	"fmt"

	pep440 "github.com/aquasecurity/go-pep440-version"
)

// comparePyPI orders PEP 440 versions with go-pep440-version (the sbatch
// hook's build orders them by hand: pep440.go).
func comparePyPI(a, b string) (int, error) {
	va, err := pep440.Parse(a)
	if err != nil {
		return 0, fmt.Errorf("%q is not a PEP 440 version", a)
	}
	vb, err := pep440.Parse(b)
	if err != nil {
		return 0, fmt.Errorf("%q is not a PEP 440 version", b)
	}
	return sign(va.Compare(vb)), nil
}
