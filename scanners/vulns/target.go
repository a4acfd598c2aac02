package vulns

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
)

// targetState is what the check keeps about one target until its walk is
// over: the torch release CVE-2025-32434 affects, and the torch.load
// calls, to report them together.
type targetState struct {
	torch *place
	loads []loadSite
}

// place is where a package was declared.
type place struct {
	a   scanners.Artifact // a copy, FS and line map dropped
	pkg Package
}

// loadSite is one torch.load call.
type loadSite struct {
	a           scanners.Artifact
	line        int
	weightsOnly bool
}

// maxLoads bounds the torch.load calls kept (and reported) per target.
const maxLoads = 10

// located copies a for a finding made later: without FS, with the line
// already mapped.
func located(a *scanners.Artifact) scanners.Artifact {
	c := *a
	c.FS, c.Lines = nil, nil
	return c
}

func (s *Scanner) state(target string) *targetState {
	st := s.targets[target]
	if st == nil {
		st = &targetState{}
		s.targets[target] = st
	}
	return st
}

// noteTorch records a torch release that CVE-2025-32434 affects, and
// returns it as kept.
func (s *Scanner) noteTorch(a *scanners.Artifact, p Package) *place {
	p.Line = a.OriginalLine(p.Line)
	pl := &place{a: located(a), pkg: p}
	s.addTorch(a.Target, pl)
	return pl
}

func (s *Scanner) addTorch(target string, pl *place) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state(target)
	if st.torch == nil {
		st.torch = pl
	}
}

var torchLoadRe = lazyregexp.New(`\btorch\.load\s*\(`)
var weightsOnlyRe = lazyregexp.New(`weights_only\s*=\s*True`)

// noteLoads records the torch.load calls of a Python source or notebook,
// and returns them.
func (s *Scanner) noteLoads(a *scanners.Artifact, data []byte) []loadSite {
	if !bytes.Contains(data, []byte("torch.load")) {
		return nil
	}
	var sites []loadSite
	eachLine(data, func(n int, line string) bool {
		loc := torchLoadRe.FindStringIndex(line)
		if loc == nil {
			return true
		}
		if i := strings.IndexByte(line, '#'); i >= 0 && i < loc[0] {
			return true // a comment
		}
		// The call's arguments: the rest of this line and a few after it.
		start := lineStart(data, n) + loc[1]
		args := data[start:min(len(data), start+1024)]
		if end := closing(args); end >= 0 {
			args = args[:end]
		}
		sites = append(sites, loadSite{a: located(a), line: a.OriginalLine(n), weightsOnly: weightsOnlyRe.Match(args)})
		return len(sites) < maxLoads
	})
	s.addLoads(a.Target, sites)
	return sites
}

func (s *Scanner) addLoads(target string, sites []loadSite) {
	if len(sites) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state(target)
	for _, l := range sites {
		if len(st.loads) < maxLoads {
			st.loads = append(st.loads, l)
		}
	}
}

// lineStart is the offset of 1-based line n in data.
func lineStart(data []byte, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data[off:], '\n')
		if j < 0 {
			return len(data)
		}
		off += j + 1
	}
	return off
}

// closing is the offset of the parenthesis that closes a call whose
// arguments start at args[0], or -1.
func closing(args []byte) int {
	depth := 1
	for i, c := range args {
		switch c {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// FinishTarget reports each torch.load call of a target whose torch
// release CVE-2025-32434 affects. Both facts come from this run's reads or,
// for a layer the per-layer cache replays, from the state kept with its
// findings (keep.go).
func (s *Scanner) FinishTarget(ctx context.Context, t scanners.Target) ([]scanners.Finding, error) {
	s.mu.Lock()
	st := s.targets[t.Name]
	delete(s.targets, t.Name)
	s.mu.Unlock()
	if st == nil || st.torch == nil || len(st.loads) == 0 {
		return nil, nil
	}
	rule := ruleByID(RuleTorchLoadWeights)
	tp := st.torch
	declared := tp.a.Path
	if tp.pkg.Line > 0 {
		declared = fmt.Sprintf("%s:%d", declared, tp.pkg.Line)
	}
	var out []scanners.Finding
	for _, l := range st.loads {
		var how string
		if l.weightsOnly {
			how = "It passes weights_only=True, which is why the pins check does not report it, but with this torch release weights_only=True does not stop a crafted checkpoint from running code."
		} else {
			how = "It does not pass weights_only=True, so the pins check reports it as pins/torch-load-unsafe too; with this torch release adding weights_only=True is not enough."
		}
		msg := fmt.Sprintf("torch.load here runs with torch %s (%s, %s), which %s affects. %s Fix: %s",
			tp.pkg.Raw, tp.pkg.From, declared, cveWeightsOnly, how, rule.Fix)
		a := l.a
		f := scanners.At(&a, rule, l.line, msg)
		f.Evidence = "torch.load"
		out = append(out, f)
	}
	return out, nil
}
