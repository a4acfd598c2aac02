//go:build !mlwarden_sbatch

package sweep

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Merge joins reports of disjoint targets (a sweep's shards) into one, as
// one scan of all their targets in name order reports them. A target in
// two reports is an error: the shards were not of one sweep. So is a
// finding, error or component of a target that is not one of its own
// report's: a shard's report never adds to another shard's targets.
func Merge(parts ...*scanners.Result) (*scanners.Result, error) {
	out := &scanners.Result{Version: scanners.ReportVersion, Targets: []scanners.Target{}, Findings: []scanners.Finding{}, Errors: []scanners.Error{}}
	seen := map[string]bool{}
	hidden := 0
	for i, p := range parts {
		if p == nil {
			continue
		}
		if err := checkOwn(p); err != nil {
			return nil, fmt.Errorf("report %d: %w", i+1, err)
		}
		for _, t := range p.Targets {
			if seen[t.Name] {
				return nil, fmt.Errorf("target %s is in two reports: they are not shards of one sweep", t.Name)
			}
			seen[t.Name] = true
		}
		out.Targets = append(out.Targets, p.Targets...)
		out.Findings = append(out.Findings, p.Findings...)
		out.Errors = append(out.Errors, p.Errors...)
		out.Components = append(out.Components, p.Components...)
		hidden += p.Summary.Hidden
	}
	slices.SortStableFunc(out.Targets, func(a, b scanners.Target) int { return strings.Compare(a.Name, b.Name) })
	order := map[string]int{}
	for i, t := range out.Targets {
		order[t.Name] = i
	}
	scanners.SortFindings(out.Findings, order)
	slices.SortStableFunc(out.Errors, func(a, b scanners.Error) int {
		return cmp.Or(cmp.Compare(order[a.Target], order[b.Target]), strings.Compare(a.Path, b.Path), strings.Compare(a.Message, b.Message))
	})
	slices.SortStableFunc(out.Components, func(a, b scanners.Component) int { return cmp.Compare(order[a.Target], order[b.Target]) })
	out.Summary = scanners.Summarize(out.Findings)
	out.Summary.Hidden = hidden
	return out, nil
}

// checkOwn checks that everything a report holds belongs to one of its
// own targets (an error of the whole run names none). A report that
// mlwarden wrote always does; one that does not was altered, and merging
// it would let it add findings to, or hide behind, another shard's
// targets.
func checkOwn(r *scanners.Result) error {
	own := make(map[string]bool, len(r.Targets))
	for _, t := range r.Targets {
		own[t.Name] = true
	}
	for _, f := range r.Findings {
		if !own[f.Target] {
			return fmt.Errorf("a finding (%s) of target %q, which is not one of the report's own targets: not a report mlwarden wrote", f.RuleID, f.Target)
		}
	}
	for _, e := range r.Errors {
		if e.Target != "" && !own[e.Target] {
			return fmt.Errorf("an error of target %q, which is not one of the report's own targets: not a report mlwarden wrote", e.Target)
		}
	}
	for _, c := range r.Components {
		if !own[c.Target] {
			return fmt.Errorf("a component of target %q, which is not one of the report's own targets: not a report mlwarden wrote", c.Target)
		}
	}
	return nil
}

// maxReport bounds one report read back.
const maxReport = 1 << 30

// ReadReport reads a JSON report (mlwarden scan --format json).
func ReadReport(r io.Reader) (*scanners.Result, error) {
	var res scanners.Result
	dec := json.NewDecoder(io.LimitReader(r, maxReport))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("not an mlwarden JSON report: %w", err)
	}
	if res.Version != scanners.ReportVersion {
		return nil, fmt.Errorf("report version %d, want %d", res.Version, scanners.ReportVersion)
	}
	if err := checkOwn(&res); err != nil {
		return nil, err
	}
	return &res, nil
}
