package secrets

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zricethezav/gitleaks/v8/config"
)

// Global allowlists for one fragment.
//
// A lazy detector that finds something runs again with the global
// allowlists (screened), and compiling them — gitleaks' 25 path and 13
// value patterns, ours — was most of a per-job sbatch process with a token
// in it. A pattern can only allow what it matches: a path pattern the
// fragment's path, a value pattern a secret, match or line, all of which
// are text of the fragment. So the patterns whose needed literals
// (need.go) occur in neither are left out before compiling; the
// allowlists then allow exactly what the whole ones do. An AND allowlist
// that loses every pattern of a kind can allow nothing and is left out
// whole (an empty kind would be no condition at all).

// allowTarget is what one fragment offers the global allowlists.
type allowTarget struct {
	path, winPath string // the fragment's paths
	text, lower   string // the lines of its findings, and lower-cased
}

// mayMatch reports whether pattern may match t's path or, for a value
// pattern, a secret, match or line in t's text.
func (t allowTarget) mayMatch(pattern string, value bool, known map[string][]need) bool {
	ns, ok := known[pattern]
	if !ok {
		if ns, ok = needs(pattern); !ok {
			return true
		}
	} else if ns == nil {
		return true
	}
	if value {
		return present(ns, t.text, t.lower)
	}
	return present(ns, t.path, strings.ToLower(t.path)) ||
		t.winPath != "" && present(ns, t.winPath, strings.ToLower(t.winPath))
}

// prunedAllowlists returns vc with only its global allowlist patterns that
// may match t, and key, which names what was kept (configs with equal keys
// compile alike).
func prunedAllowlists(vc config.ViperConfig, t allowTarget, known map[string][]need) (config.ViperConfig, string) {
	var key strings.Builder
	//lint:ignore SA1019 gitleaks' default config still uses the [allowlist] table.
	lists := globalLists(vc.Allowlists, vc.AllowList)
	//lint:ignore SA1019 see above.
	vc.AllowList, vc.Allowlists = nil, nil
	for i, a := range lists {
		c := *a
		c.Paths, c.Regexes = nil, nil
		for j, p := range a.Paths {
			if t.mayMatch(p, false, known) {
				c.Paths = append(c.Paths, p)
				fmt.Fprintf(&key, "%d.p%d,", i, j)
			}
		}
		for j, r := range a.Regexes {
			if t.mayMatch(r, true, known) {
				c.Regexes = append(c.Regexes, r)
				fmt.Fprintf(&key, "%d.r%d,", i, j)
			}
		}
		lost := len(a.Paths) > 0 && len(c.Paths) == 0 || len(a.Regexes) > 0 && len(c.Regexes) == 0
		and := strings.EqualFold(a.Condition, "and") || a.Condition == "&&"
		if and && lost || len(c.Paths)+len(c.Regexes)+len(c.StopWords)+len(c.Commits) == 0 {
			key.WriteString(strconv.Itoa(i) + "-,")
			continue // it can allow nothing here
		}
		vc.Allowlists = append(vc.Allowlists, &c)
	}
	return vc, key.String()
}

// globalLists returns a config's [[allowlists]] and its [allowlist] (the
// table gitleaks still reads), in a new slice; T is gitleaks' unexported
// allowlist type.
func globalLists[T any](lists []*T, one *T) []*T {
	out := append(lists[:0:0], lists...)
	if one != nil {
		out = append(out, one)
	}
	return out
}
