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
// two reports is an error: the shards were not of one sweep.
func Merge(parts ...*scanners.Result) (*scanners.Result, error) {
	out := &scanners.Result{Version: scanners.ReportVersion, Targets: []scanners.Target{}, Findings: []scanners.Finding{}, Errors: []scanners.Error{}}
	seen := map[string]bool{}
	hidden := 0
	for _, p := range parts {
		if p == nil {
			continue
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
	return &res, nil
}
