//go:build !mlwarden_sbatch

package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/mlwarden/mlwarden/scanners"
)

// htmlWriter writes one self-contained HTML page: the summary by severity
// (an inline SVG chart) and by check, filters (severity, check, text,
// suppressed findings), and each finding with where it is, what and why,
// and how to fix it; targets with their notes, and what could not be
// scanned. It fetches nothing: styles and the filter script are inline,
// and a Content-Security-Policy forbids any request. Everything from the
// scanned content is escaped by html/template.
type htmlWriter struct{ o Options }

//go:embed html.tmpl
var htmlTemplate string

// htmlPage is parsed at the first HTML report, not at init: every process
// that links reports (the per-job sbatch hook too) paid for it.
var htmlPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(htmlTemplate))
})

type htmlData struct {
	Version  string
	Summary  string
	Targets  []scanners.Target
	Bars     []htmlBar
	Checks   []htmlCount
	Findings []htmlFinding
	Errors   []string
	Hidden   int
	Total    int
}

type htmlBar struct {
	Severity   string
	Count      int
	Y, Width   int
	LabelY     int
	CountX     int
	Suppressed bool
}

type htmlCount struct {
	Name  string
	Count int
}

type htmlFinding struct {
	Severity, RuleID, Title, Check, Target, Location string
	Message, Why, Fix, Evidence, Layer, Commit       string
	Suppressed                                       string
	Fails                                            bool
}

func (h *htmlWriter) Write(w io.Writer, res *scanners.Result) error {
	idx := ruleIndex(h.o.Rules)
	d := htmlData{Version: h.o.ToolVersion, Summary: Summary(res), Targets: res.Targets, Hidden: res.Summary.Hidden, Total: len(res.Findings)}
	if d.Version == "" {
		d.Version = "dev"
	}
	most := 1
	for _, sev := range scanners.Severities() {
		most = max(most, res.Summary.Count(sev))
	}
	most = max(most, res.Summary.Suppressed)
	bar := func(i int, name string, n int, sup bool) htmlBar {
		return htmlBar{Severity: name, Count: n, Y: 10 + i*26, LabelY: 27 + i*26, Width: 300 * n / most, CountX: 100 + 300*n/most + 6, Suppressed: sup}
	}
	for i, sev := range scanners.Severities() {
		d.Bars = append(d.Bars, bar(i, sev.String(), res.Summary.Count(sev), false))
	}
	d.Bars = append(d.Bars, bar(len(d.Bars), "suppressed", res.Summary.Suppressed, true))
	checks := map[string]int{}
	for _, f := range res.Findings {
		if f.Suppressed == "" {
			checks[f.Check]++
		}
		r := idx[f.RuleID]
		loc := f.Path
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", loc, f.Line)
		}
		title := r.Title
		if title == "" {
			title = f.RuleID
		}
		d.Findings = append(d.Findings, htmlFinding{
			Severity: f.Severity.String(), RuleID: f.RuleID, Title: title, Check: f.Check, Target: f.Target, Location: loc,
			Message: f.Message, Why: r.Why, Fix: r.Fix, Evidence: f.Evidence, Layer: f.Layer, Commit: f.Commit,
			Suppressed: f.Suppressed, Fails: f.Suppressed == "" && h.o.FailOn != nil && f.Severity >= *h.o.FailOn,
		})
	}
	for c, n := range checks {
		d.Checks = append(d.Checks, htmlCount{c, n})
	}
	slices.SortFunc(d.Checks, func(a, b htmlCount) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range res.Errors {
		d.Errors = append(d.Errors, e.Error())
	}
	return htmlPage().Execute(w, d)
}
