//go:build !mlwarden_sbatch

package rules

import (
	"testing"

	pep440 "github.com/aquasecurity/go-pep440-version"
)

// pep440Cases are versions whose order the hand-written PEP 440 ordering
// must give as go-pep440-version does: every kind of segment, their
// spellings, and what either refuses.
var pep440Cases = []string{
	"0", "0.0", "1", "1.0", "1.0.0", "1.0.0.0.1", "1.2", "1.10", "01.2", "1.02", "v1.0", "V1.0", " 1.0 ", "\t1.0\n", "1!0", "1!1.0", "0!1.0", "2!0.1",
	"1.0a", "1.0a0", "1.0a1", "1.0A1", "1.0alpha1", "1.0-a1", "1.0_a_1", "1.0.a.1", "1.0b2", "1.0beta2", "1.0c1", "1.0rc1", "1.0RC1", "1.0pre1", "1.0preview1", "1.0rc",
	"1.0.post1", "1.0post1", "1.0-1", "1.0-post1", "1.0.rev1", "1.0r1", "1.0.post", "1.0post0", "1.0-0", "1.0poſt", "1.0poſt1", "1.0.poſt0",
	"1.0.dev1", "1.0dev", "1.0.dev0", "1.0a1.dev1", "1.0.post1.dev1", "1.0a1.post1.dev1", "1.0-dev1", "1.0_dev_1",
	"1.0+local", "1.0+1", "1.0+01", "1.0+abc.1", "1.0+abc.2", "1.0+1.abc", "1.0+abc-def", "1.0+abc_def", "1.0+ABC", "1.0+\u212a", "1.0+18446744073709551616", "1.0+2.1", "1.0+2",
	"2.5.1+cu124", "2.5.1+cu121", "2.5.1", "2.5.1rc1", "2.5.1.post1", "2.5.1.dev20240101", "2.6.0a0+git1234",
	"18446744073709551615", "18446744073709551616", "1.18446744073709551616", "1.0a18446744073709551616", "1.0.post18446744073709551616", "1.0.dev18446744073709551616", "18446744073709551616!1",
	"", "v", "1.", ".1", "1..0", "1.0-", "1.0a-", "1.0+", "1.0+a..b", "1.0 a1", "1.0alpha-beta", "1.0.post1.post2", "1.0x", "a1.0", "1.0\v",
}

// TestPEP440Same: the hand-written ordering (the sbatch hook's) refuses
// what go-pep440-version refuses and orders every pair of the cases as it
// does.
func TestPEP440Same(t *testing.T) {
	parsed := 0
	for _, a := range pep440Cases {
		if _, err := parsePyPI(a); (err == nil) != libParses(a) {
			t.Errorf("%q: parsed %v by hand, %v by the library", a, err == nil, libParses(a))
		}
		for _, b := range pep440Cases {
			comparePEP440(t, a, b)
		}
		if libParses(a) {
			parsed++
		}
	}
	if parsed < len(pep440Cases)/2 {
		t.Errorf("only %d of %d cases parse: the comparison is not exercised", parsed, len(pep440Cases))
	}
}

func libParses(s string) bool {
	_, err := pep440.Parse(s)
	return err == nil
}

func comparePEP440(t *testing.T, a, b string) {
	t.Helper()
	va, errA := pep440.Parse(a)
	vb, errB := pep440.Parse(b)
	ha, herrA := parsePyPI(a)
	hb, herrB := parsePyPI(b)
	if (errA == nil) != (herrA == nil) || (errB == nil) != (herrB == nil) {
		t.Errorf("%q, %q: parsed by hand %v %v, by the library %v %v", a, b, herrA == nil, herrB == nil, errA == nil, errB == nil)
		return
	}
	if errA != nil || errB != nil {
		return
	}
	if want, got := sign(va.Compare(vb)), ha.compare(hb); got != want {
		t.Errorf("compare(%q, %q) = %d by hand, %d by the library", a, b, got, want)
	}
}

// FuzzPEP440Same compares the two on what the fuzzer makes of the cases.
func FuzzPEP440Same(f *testing.F) {
	for i, a := range pep440Cases {
		f.Add(a, pep440Cases[(i*7+3)%len(pep440Cases)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 200 || len(b) > 200 {
			return
		}
		comparePEP440(t, a, b)
		comparePEP440(t, a, a)
	})
}
