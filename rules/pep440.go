package rules

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// PEP 440 versions, ordered by hand for the sbatch hook's build.
//
// github.com/aquasecurity/go-pep440-version compiles its patterns at
// package init, which cost every job the per-job sbatch hook checks about
// 0.5 ms (docs/design/sbatch-hook.md) though the hook compares Python
// versions only with --checks vulns. The hook's build therefore orders
// them here, with the pattern compiled at first use; the default build
// keeps the library (versions_pypi.go), and TestPEP440Same and
// FuzzPEP440Same find the same order, and the same versions refused, as
// the library's on every case.

// pep440Pattern is PEP 440's version pattern (its appendix), anchored, in any
// case, with surrounding white space. Its groups: 1 epoch, 2 release,
// 3 pre-release label, 4 its number, 5 post number after "-", 6 post
// label, 7 its number, 8 dev label, 9 its number, 10 local.
var pep440Pattern = lazyregexp.New(`(?i)^\s*v?(?:(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*)` +
	`(?:[-_\.]?(a|b|c|rc|alpha|beta|pre|preview)[-_\.]?([0-9]+)?)?` +
	`(?:-([0-9]+)|[-_\.]?(post|rev|r)[-_\.]?([0-9]+)?)?` +
	`(?:[-_\.]?(dev)[-_\.]?([0-9]+)?)?)` +
	`(?:\+([a-z0-9]+(?:[-_\.][a-z0-9]+)*))?\s*$`)

// pyVersion is a parsed PEP 440 version.
type pyVersion struct {
	epoch   uint64
	release []uint64 // without trailing zeros
	// pre is the pre-release's rank: preDevOnly (no pre- or
	// post-release, a dev release), 0, 1, 2 for a, b, rc, or preNone.
	pre    int
	preNum uint64
	post   bool // a post-release
	postN  uint64
	dev    bool // a dev release
	devN   uint64
	local  []localPart // nil without a local version
}

// localPart is one dot-separated part of a local version: a number, or
// letters (and digits, - or _) that sort before every number.
type localPart struct {
	num   uint64
	str   string
	isNum bool
}

const (
	preDevOnly = -1
	preNone    = 3
)

// parsePyPI parses a PEP 440 version. Numbers past 64 bits are refused
// (a local part's are letters).
func parsePyPI(s string) (pyVersion, error) {
	m := pep440Pattern.FindStringSubmatch(s)
	if m == nil {
		return pyVersion{}, fmt.Errorf("malformed version: %s", s)
	}
	var v pyVersion
	num := func(d string) (uint64, bool) {
		if d == "" {
			return 0, true
		}
		n, err := strconv.ParseUint(d, 10, 64)
		return n, err == nil
	}
	var ok bool
	bad := func() (pyVersion, error) { return pyVersion{}, fmt.Errorf("malformed version: %s", s) }
	if v.epoch, ok = num(m[1]); !ok {
		return bad()
	}
	for _, d := range strings.Split(m[2], ".") {
		n, ok := num(d)
		if !ok {
			return bad()
		}
		v.release = append(v.release, n)
	}
	for len(v.release) > 0 && v.release[len(v.release)-1] == 0 {
		v.release = v.release[:len(v.release)-1]
	}
	v.pre = preNone
	if m[3] != "" {
		switch strings.ToLower(m[3]) {
		case "a", "alpha":
			v.pre = 0
		case "b", "beta":
			v.pre = 1
		default: // c, rc, pre, preview
			v.pre = 2
		}
		if v.preNum, ok = num(m[4]); !ok {
			return bad()
		}
	}
	// The post label, or "post" when a number is given: a label that
	// matched only by Unicode folding ("poſt") is no label.
	label := m[6] != "" && slices.Contains([]string{"post", "rev", "r"}, strings.ToLower(m[6]))
	if d := m[5] + m[7]; d != "" {
		label = true
		if v.postN, ok = num(d); !ok {
			return bad()
		}
	}
	v.post = label
	if m[8] != "" {
		v.dev = true
		if v.devN, ok = num(m[9]); !ok {
			return bad()
		}
	}
	if m[3] == "" && !v.post && v.dev {
		v.pre = preDevOnly // 1.0.dev1 sorts before 1.0a1
	}
	if m[10] != "" {
		for _, p := range strings.Split(strings.ToLower(m[10]), ".") {
			if n, err := strconv.ParseUint(p, 10, 64); err == nil {
				v.local = append(v.local, localPart{num: n, isNum: true})
			} else {
				v.local = append(v.local, localPart{str: p})
			}
		}
	}
	return v, nil
}

// compare orders v and w as PEP 440 does: epoch, release (trailing zeros
// ignored), pre-release (a dev release of the release first, then a, b,
// rc, then the release), post-release (none first), dev release (none
// last), local version (none first; parts in turn, letters before
// numbers, a shorter one first).
func (v pyVersion) compare(w pyVersion) int {
	if c := cmp.Compare(v.epoch, w.epoch); c != 0 {
		return c
	}
	for i := range max(len(v.release), len(w.release)) {
		var a, b uint64
		if i < len(v.release) {
			a = v.release[i]
		}
		if i < len(w.release) {
			b = w.release[i]
		}
		if c := cmp.Compare(a, b); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(v.pre, w.pre); c != 0 {
		return c
	}
	if v.pre != preNone && v.pre != preDevOnly {
		if c := cmp.Compare(v.preNum, w.preNum); c != 0 {
			return c
		}
	}
	if v.post != w.post {
		return boolOrder(v.post)
	}
	if c := cmp.Compare(v.postN, w.postN); v.post && c != 0 {
		return c
	}
	if v.dev != w.dev {
		return -boolOrder(v.dev) // a dev release sorts before the release
	}
	if c := cmp.Compare(v.devN, w.devN); v.dev && c != 0 {
		return c
	}
	if (v.local == nil) != (w.local == nil) {
		return boolOrder(v.local != nil)
	}
	for i := range min(len(v.local), len(w.local)) {
		a, b := v.local[i], w.local[i]
		switch {
		case a.isNum && b.isNum:
			if c := cmp.Compare(a.num, b.num); c != 0 {
				return c
			}
		case a.isNum != b.isNum:
			return boolOrder(a.isNum)
		default:
			if c := strings.Compare(a.str, b.str); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(v.local), len(w.local))
}

// boolOrder is 1 for true and -1 for false: what has the part sorts after
// what has not.
func boolOrder(b bool) int {
	if b {
		return 1
	}
	return -1
}
