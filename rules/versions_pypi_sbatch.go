//go:build mlwarden_sbatch

package rules

import "fmt"

// comparePyPI orders PEP 440 versions as go-pep440-version does, by hand
// (pep440.go): the sbatch hook's build does not link that library.
func comparePyPI(a, b string) (int, error) {
	va, err := parsePyPI(a)
	if err != nil {
		return 0, fmt.Errorf("%q is not a PEP 440 version", a)
	}
	vb, err := parsePyPI(b)
	if err != nil {
		return 0, fmt.Errorf("%q is not a PEP 440 version", b)
	}
	return va.compare(vb), nil
}
