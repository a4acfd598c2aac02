package scannertest

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

// fake is a check whose every behaviour a test can break.
type fake struct {
	check string
	rules []scanners.Rule
	// wants, when set, replaces the default (text files).
	wants func(a *scanners.Artifact, head []byte) bool
	// scan, when set, replaces the default (a finding of the first rule at
	// every line holding "needle").
	scan   func(a *scanners.Artifact, data []byte) ([]scanners.Finding, error)
	finish func(t scanners.Target) ([]scanners.Finding, error)
}

var goodRule = scanners.Rule{ID: "misconfig/needle-found", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh, Title: "Needle", Why: "Needles prick."}

func newFake() *fake {
	return &fake{check: scanners.CheckMisconfig, rules: []scanners.Rule{goodRule}}
}

func (f *fake) Check() string          { return f.check }
func (f *fake) Rules() []scanners.Rule { return f.rules }

func (f *fake) Wants(a *scanners.Artifact, head []byte) bool {
	if f.wants != nil {
		return f.wants(a, head)
	}
	return !scanners.IsBinary(head)
}

func (f *fake) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	data, _, err := scanners.ReadAll(c, 0)
	if err != nil {
		return nil, err
	}
	if f.scan != nil {
		return f.scan(a, data)
	}
	var out []scanners.Finding
	for i, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "needle") {
			out = append(out, scanners.At(a, goodRule, i+1, "a needle"))
		}
	}
	return out, nil
}

// finisher is a fake that judges whole targets too.
type finisher struct{ *fake }

func (f finisher) FinishTarget(ctx context.Context, t scanners.Target) ([]scanners.Finding, error) {
	return f.finish(t)
}

var fakeSeeds = []Seed{
	{Path: "a.txt", Data: []byte("hay\nneedle\n")},
	{Target: "dir", Path: "x/b.txt", Data: []byte("needle")},
	{Target: "dir", Path: "x/c.bin", Data: []byte("\x00\x01")},
}

// errorsOf runs every conformance check on sc.
func errorsOf(sc scanners.Scanner, seeds []Seed) []error {
	nolog := func(string, ...any) {}
	var errs []error
	errs = append(errs, checkRules(sc)...)
	errs = append(errs, checkWants(sc, seeds)...)
	errs = append(errs, checkWantsCost(sc, seeds, MaxWantsCost, nolog)...)
	errs = append(errs, checkEmptyTarget(sc)...)
	errs = append(errs, checkSeeds(sc, seeds, nolog)...)
	return errs
}

func TestConformanceGood(t *testing.T) {
	Conformance(t, newFake(), fakeSeeds...)
	fin := finisher{newFake()}
	fin.finish = func(t scanners.Target) ([]scanners.Finding, error) { return nil, nil }
	Conformance(t, fin, fakeSeeds...)
}

func TestConformanceBad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(f *fake) scanners.Scanner
		want    []string // substrings of the errors, each in some error
	}{
		{"unknown check", func(f *fake) scanners.Scanner {
			f.check = "slurm"
			return f
		}, []string{`Check() = "slurm"`, `rule "misconfig/needle-found": want the form slurm/NAME`, "has Check \"misconfig\", want \"slurm\""}},
		{"bad rules", func(f *fake) scanners.Scanner {
			f.rules = append(f.rules,
				scanners.Rule{ID: "misconfig/Needle_Found", Check: scanners.CheckMisconfig, Title: "t", Why: "w"},
				scanners.Rule{ID: "needle", Check: scanners.CheckMisconfig, Title: "t", Why: "w"},
				scanners.Rule{ID: "pins/needle", Check: scanners.CheckPins, Title: "t", Why: "w"},
				scanners.Rule{ID: "misconfig/needle-found", Check: scanners.CheckMisconfig, Title: "t", Why: "w"},
				scanners.Rule{ID: "misconfig/quiet", Check: scanners.CheckMisconfig, Severity: 9},
			)
			return f
		}, []string{`"misconfig/Needle_Found": want the form`, `"needle": want the form`, `"pins/needle": want the form`, `rule pins/needle: Check is "pins"`,
			"misconfig/needle-found: listed twice", "misconfig/quiet: invalid severity 9", "misconfig/quiet: no Title", "misconfig/quiet: no Why"}},
		{"no rules", func(f *fake) scanners.Scanner {
			f.rules = nil
			return f
		}, []string{"Rules() is empty", `rule "misconfig/needle-found", which Rules() does not list`}},
		{"wants reads", func(f *fake) scanners.Scanner {
			f.wants = func(a *scanners.Artifact, head []byte) bool {
				if a.FS != nil {
					fs.ReadFile(a.FS, a.Path)
				}
				return true
			}
			return f
		}, []string{`Wants(a.txt) opened ["a.txt"`, "through Artifact.FS"}},
		{"wants writes the head", func(f *fake) scanners.Scanner {
			f.wants = func(a *scanners.Artifact, head []byte) bool {
				if len(head) > 0 {
					head[0] = 'X'
				}
				return true
			}
			return f
		}, []string{"Wants(a.txt) changed the head"}},
		{"wants panics", func(f *fake) scanners.Scanner {
			f.wants = func(a *scanners.Artifact, head []byte) bool { return head[0] == 'n' }
			return f
		}, []string{"Wants on a zero artifact and no head: panic: runtime error: index out of range"}},
		{"wants changes its mind", func(f *fake) scanners.Scanner {
			n := 0
			f.wants = func(a *scanners.Artifact, head []byte) bool { n++; return n%2 == 0 }
			return f
		}, []string{"Wants(a.txt) answered true, then false"}},
		{"wants is slow", func(f *fake) scanners.Scanner {
			f.wants = func(a *scanners.Artifact, head []byte) bool { time.Sleep(time.Millisecond); return true }
			return f
		}, []string{"Wants takes ", "want under 50µs"}},
		{"wants nothing", func(f *fake) scanners.Scanner {
			f.wants = func(a *scanners.Artifact, head []byte) bool { return false }
			return f
		}, []string{"no seed is wanted: Wants takes none of the 3"}},
		{"scan panics", func(f *fake) scanners.Scanner {
			f.scan = func(a *scanners.Artifact, data []byte) ([]scanners.Finding, error) {
				if a.Path == "x/b.txt" {
					panic("boom")
				}
				return nil, nil
			}
			return f
		}, []string{"dir: x/b.txt: misconfig check: internal error (panic): boom: panic: boom", "scannertest.TestConformanceBad"}},
		{"scan fails", func(f *fake) scanners.Scanner {
			f.scan = func(a *scanners.Artifact, data []byte) ([]scanners.Finding, error) { return nil, errors.New("no luck") }
			return f
		}, []string{"a.txt: misconfig check: no luck"}},
		{"bad findings", func(f *fake) scanners.Scanner {
			f.scan = func(a *scanners.Artifact, data []byte) ([]scanners.Finding, error) {
				good := scanners.At(a, goodRule, 1, "a needle")
				unknown, wrongCheck, silent, badSev, elsewhere, negative := good, good, good, good, good, good
				unknown.RuleID = "misconfig/haystack"
				// Distinct messages: the dispatcher drops findings that
				// differ only in Check or Severity.
				wrongCheck.Check, wrongCheck.Message = scanners.CheckPins, "wrong check"
				silent.Message = ""
				badSev.Severity, badSev.Message = -1, "bad severity"
				elsewhere.Path = "y/nowhere.txt"
				negative.Line = -3
				return []scanners.Finding{good, unknown, wrongCheck, silent, badSev, elsewhere, negative}, nil
			}
			return f
		}, []string{`rule "misconfig/haystack", which Rules() does not list`, `has Check "pins", want "misconfig"`, "finding has no message",
			"invalid severity -1", "dir: y/nowhere.txt: misconfig/needle-found finding at a path the target does not have", "finding at line -3"}},
		{"finish panics", func(f *fake) scanners.Scanner {
			f.finish = func(t scanners.Target) ([]scanners.Finding, error) {
				if t.Name == "" {
					panic("no name")
				}
				return nil, nil
			}
			return finisher{f}
		}, []string{"FinishTarget({Name: Kind: Digest: Notes:[] Skipped:0 VCS:<nil> Properties:map[]}): panic: no name"}},
		{"finish fails", func(f *fake) scanners.Scanner {
			f.finish = func(t scanners.Target) ([]scanners.Finding, error) { return nil, errors.New("no target") }
			return finisher{f}
		}, []string{"empty target: empty: misconfig check: no target", "FinishTarget({Name:never-walked Kind:image Digest: Notes:[] Skipped:0 VCS:<nil> Properties:map[]}): no target"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := errorsOf(tc.breakIt(newFake()), fakeSeeds)
			var all []string
			for _, err := range errs {
				all = append(all, err.Error())
			}
			for _, w := range tc.want {
				found := false
				for _, e := range all {
					if strings.Contains(e, w) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("no error says %q; errors:\n%s", w, strings.Join(all, "\n"))
				}
			}
		})
	}
}

func TestTargetsRejectsBadSeeds(t *testing.T) {
	_, errs := targets([]Seed{
		{Target: "t", Path: "a"}, {Target: "t", Path: "a"}, {Path: "/abs"}, {Path: "../up"}, {Path: "."},
	})
	if len(errs) != 4 {
		t.Errorf("errors %v, want a duplicate and three invalid paths", errs)
	}
}
