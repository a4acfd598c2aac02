package rules

// Version ordering per ecosystem, for the advisory table.

import (
	"cmp"
	"fmt"

	debversion "github.com/knqyf263/go-deb-version"
)

// Ecosystems of the advisory table: how a package's versions are written
// and ordered.
const (
	// EcosystemPyPI is Python packages; versions are ordered as PEP 440
	// orders them (pre-releases before the release, local versions such as
	// 2.5.1+cu124 after their public version).
	EcosystemPyPI = "PyPI"
	// EcosystemNVIDIA is NVIDIA's own packages (container toolkit, GPU
	// Operator and its operands, the display driver). Their versions are
	// ordered as dpkg orders Debian versions (epochs, "~" before anything,
	// numeric runs compared as numbers), which also orders plain dotted
	// versions such as 535.161.07 and 24.9.2 and NVIDIA's package
	// versions such as 1.17.5~rc.1-1 as NVIDIA releases them.
	EcosystemNVIDIA = "NVIDIA"
)

// maxVersionLen bounds a version string; anything longer is not one.
const maxVersionLen = 128

// CompareVersions orders versions a and b of ecosystem eco: -1, 0 or 1.
// It fails when either is not a version of that ecosystem.
func CompareVersions(eco, a, b string) (int, error) {
	if len(a) > maxVersionLen || len(b) > maxVersionLen {
		return 0, fmt.Errorf("version longer than %d bytes", maxVersionLen)
	}
	switch eco {
	case EcosystemPyPI:
		return comparePyPI(a, b)
	case EcosystemNVIDIA:
		va, err := debVersion(a)
		if err != nil {
			return 0, err
		}
		vb, err := debVersion(b)
		if err != nil {
			return 0, err
		}
		return sign(va.Compare(vb)), nil
	}
	return 0, fmt.Errorf("unknown ecosystem %q", eco)
}

// ValidVersion reports whether v is a version of ecosystem eco.
func ValidVersion(eco, v string) bool {
	_, err := CompareVersions(eco, v, v)
	return err == nil
}

func debVersion(s string) (debversion.Version, error) {
	// dpkg requires the upstream part to start with a digit; the library
	// accepts more, so that is checked here.
	up := s
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			up = s[i+1:]
			break
		}
	}
	if up == "" || up[0] < '0' || up[0] > '9' {
		return debversion.Version{}, fmt.Errorf("%q is not a Debian-ordered version", s)
	}
	v, err := debversion.NewVersion(s)
	if err != nil {
		return debversion.Version{}, fmt.Errorf("%q is not a Debian-ordered version", s)
	}
	return v, nil
}

// sign is -1, 0 or 1 as n is below, at or above 0.
func sign(n int) int { return cmp.Compare(n, 0) }
