//go:build !mlwarden_sbatch

package sweep_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/sweep"
)

// shardReport is a report of targets names with one finding, error and
// component on each.
func shardReport(names ...string) *scanners.Result {
	r := &scanners.Result{Version: scanners.ReportVersion, Targets: []scanners.Target{}, Findings: []scanners.Finding{}, Errors: []scanners.Error{}}
	for _, n := range names {
		r.Targets = append(r.Targets, scanners.Target{Name: n, Kind: scanners.KindImage})
		r.Findings = append(r.Findings, scanners.Finding{RuleID: "pins/latest-tag", Check: "pins", Severity: scanners.SeverityHigh, Target: n, Path: "Dockerfile", Line: 1, Fingerprint: "fp-" + n})
		r.Errors = append(r.Errors, scanners.Error{Target: n, Path: "x", Message: "could not read"})
		r.Components = append(r.Components, scanners.Component{Kind: scanners.ComponentKind("model"), Target: n, Path: "m.pt"})
	}
	r.Summary = scanners.Summarize(r.Findings)
	return r
}

// TestMergeOnlyOwnTargets: a shard's report that holds a finding, an error
// or a component of a target it does not list (another shard's) is
// refused, both when read back and when merged; errors of the whole run
// (no target) are the report's own.
func TestMergeOnlyOwnTargets(t *testing.T) {
	for _, c := range []struct {
		name  string
		alter func(r *scanners.Result)
		want  string // "" for no error
	}{
		{"as written", func(*scanners.Result) {}, ""},
		{"an error of the whole run", func(r *scanners.Result) {
			r.Errors = append(r.Errors, scanners.Error{Message: "interrupted: context canceled"})
		}, ""},
		{"a finding of another shard's target", func(r *scanners.Result) {
			r.Findings = append(r.Findings, scanners.Finding{RuleID: "secrets/hf-token", Check: "secrets", Severity: scanners.SeverityCritical, Target: "registry:r.example/b:1", Path: "forged"})
		}, `a finding (secrets/hf-token) of target "registry:r.example/b:1"`},
		{"an error of another shard's target", func(r *scanners.Result) {
			r.Errors = append(r.Errors, scanners.Error{Target: "registry:r.example/b:1", Message: "forged"})
		}, `an error of target "registry:r.example/b:1"`},
		{"a component of another shard's target", func(r *scanners.Result) {
			r.Components = append(r.Components, scanners.Component{Kind: scanners.ComponentKind("model"), Target: "registry:r.example/b:1"})
		}, `a component of target "registry:r.example/b:1"`},
		{"a finding of no target", func(r *scanners.Result) {
			r.Findings = append(r.Findings, scanners.Finding{RuleID: "secrets/hf-token", Check: "secrets", Severity: scanners.SeverityCritical})
		}, `of target ""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := shardReport("registry:r.example/a:1"), shardReport("registry:r.example/b:1")
			c.alter(a)
			_, err := sweep.Merge(b, a)
			if c.want == "" {
				if err != nil {
					t.Fatalf("merge: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "report 2") {
				t.Fatalf("merge: err %v, want %q in report 2", err, c.want)
			}
			data, _ := json.Marshal(a)
			_, err = sweep.ReadReport(bytes.NewReader(data))
			if (err != nil) != (c.want != "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("read back: err %v, want %q", err, c.want)
			}
		})
	}
}
