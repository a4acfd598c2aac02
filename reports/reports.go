// Package reports turns a scan's result into one output format: text for
// people, JSON (the contract in docs/architecture.md) for scripts, SARIF 2.1.0 for code
// scanning.
package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Formats lists the valid --format values.
var Formats = []string{"text", "json", "sarif"}

// Options configures a writer.
type Options struct {
	// Color enables ANSI colour in the text format (on a terminal, without NO_COLOR).
	Color bool
	// ToolVersion is written into SARIF's tool.driver.version.
	ToolVersion string
	// Rules describes every rule, for SARIF's tool.driver.rules and the text
	// format's titles.
	Rules []scanners.Rule
	// ShowSuppressed lists suppressed findings in the text format too.
	ShowSuppressed bool
}

// Writer writes one format.
type Writer interface {
	Write(w io.Writer, res *scanners.Result) error
}

// New returns the writer for format, or an error naming the valid formats.
func New(format string, o Options) (Writer, error) {
	switch format {
	case "text", "":
		return &textWriter{o: o}, nil
	case "json":
		return jsonWriter{}, nil
	case "sarif":
		return &sarifWriter{o: o}, nil
	}
	return nil, fmt.Errorf("unknown format %q (valid: %s)", format, strings.Join(Formats, ", "))
}

// Write writes res to w in format.
func Write(w io.Writer, format string, res *scanners.Result, o Options) error {
	wr, err := New(format, o)
	if err != nil {
		return err
	}
	return wr.Write(w, res)
}

type jsonWriter struct{}

// Write writes the JSON report: exactly scanners.Result, indented, with a
// trailing newline.
func (jsonWriter) Write(w io.Writer, res *scanners.Result) error {
	// The lists are always arrays, never null: consumers index them.
	out := *res
	if out.Targets == nil {
		out.Targets = []scanners.Target{}
	}
	if out.Findings == nil {
		out.Findings = []scanners.Finding{}
	}
	if out.Errors == nil {
		out.Errors = []scanners.Error{}
	}
	res = &out
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(res)
}

// ReadJSON reads a JSON report, such as a baseline.
func ReadJSON(r io.Reader) (*scanners.Result, error) {
	var res scanners.Result
	dec := json.NewDecoder(r)
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("read JSON report: %w", err)
	}
	if res.Version != scanners.ReportVersion {
		return nil, fmt.Errorf("read JSON report: version %d, want %d", res.Version, scanners.ReportVersion)
	}
	return &res, nil
}

func ruleIndex(rules []scanners.Rule) map[string]scanners.Rule {
	m := make(map[string]scanners.Rule, len(rules))
	for _, r := range rules {
		m[r.ID] = r
	}
	return m
}

// usedRules returns the rules the findings name, in ID order, with a minimal
// description for a rule the index lacks.
func usedRules(res *scanners.Result, idx map[string]scanners.Rule) []scanners.Rule {
	seen := map[string]bool{}
	var out []scanners.Rule
	for _, f := range res.Findings {
		if seen[f.RuleID] {
			continue
		}
		seen[f.RuleID] = true
		r, ok := idx[f.RuleID]
		if !ok {
			r = scanners.Rule{ID: f.RuleID, Check: f.Check, Severity: f.Severity, Title: f.RuleID}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b scanners.Rule) int { return strings.Compare(a.ID, b.ID) })
	return out
}
