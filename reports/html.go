//go:build !mlwarden_sbatch

package reports

import (
	"cmp"
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
// suppressed findings), and the findings as cards, most severe first
// (within a severity by target, path and line; the reader may sort by path
// instead), with where each is, what and why, and how to fix it — the
// findings of one rule on one line (three unpinned packages of one pip
// install) one card listing them; targets with their notes, and what could
// not be scanned. It fetches nothing: styles and the filter script are inline,
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

// htmlFinding is one card: the findings of one rule at one place (target,
// path, line, layer, commit) with one severity and one suppression.
type htmlFinding struct {
	Severity, RuleID, Title, Check, Target, Location string
	Why, Fix, Layer, Commit                          string
	Suppressed                                       string
	// Verification is what the provider said (live, revoked, unknown;
	// empty when nobody asked): live cards come first.
	Verification string
	Fails        bool
	Items        []htmlItem
	// BySeverity and ByPath are the card's places in the two orders the
	// page offers (the script sorts by one of them).
	BySeverity, ByPath int
}

// htmlItem is one finding of a card.
type htmlItem struct{ Message, Evidence string }

// Count is how many findings the card holds.
func (f htmlFinding) Count() int { return len(f.Items) }

// htmlCards groups the findings into cards and numbers them in both
// orders: by severity, most severe first, then target, path, line and rule;
// by target, path and line, then the most severe. res.Findings are in the
// report's total order, so the cards and their items are deterministic.
func htmlCards(fs []scanners.Finding, card func(scanners.Finding) htmlFinding) []htmlFinding {
	type key struct {
		target, rule, path, layer, commit, suppressed, verification string
		line                                                        int
		sev                                                         scanners.Severity
	}
	var cards []htmlFinding
	var sevs []scanners.Severity
	var lines []int
	var paths []string
	at := map[key]int{}
	for _, f := range fs {
		k := key{f.Target, f.RuleID, f.Path, f.Layer, f.Commit, f.Suppressed, f.Verification, f.Line, f.Severity}
		i, ok := at[k]
		if !ok {
			i = len(cards)
			at[k] = i
			cards = append(cards, card(f))
			sevs, lines, paths = append(sevs, f.Severity), append(lines, f.Line), append(paths, f.Path)
		}
		cards[i].Items = append(cards[i].Items, htmlItem{Message: f.Message, Evidence: f.Evidence})
	}
	idx := make([]int, len(cards))
	for i := range idx {
		idx[i] = i
	}
	place := func(a, b int) int {
		return cmp.Or(strings.Compare(cards[a].Target, cards[b].Target), strings.Compare(paths[a], paths[b]), cmp.Compare(lines[a], lines[b]))
	}
	live := func(i int) int {
		if cards[i].Verification == scanners.VerificationLive {
			return 0
		}
		return 1
	}
	bySev := slices.Clone(idx)
	slices.SortStableFunc(bySev, func(a, b int) int {
		return cmp.Or(cmp.Compare(live(a), live(b)), cmp.Compare(sevs[b], sevs[a]), place(a, b), strings.Compare(cards[a].RuleID, cards[b].RuleID))
	})
	byPath := slices.Clone(idx)
	slices.SortStableFunc(byPath, func(a, b int) int {
		return cmp.Or(place(a, b), cmp.Compare(sevs[b], sevs[a]), strings.Compare(cards[a].RuleID, cards[b].RuleID))
	})
	for rank, i := range bySev {
		cards[i].BySeverity = rank
	}
	for rank, i := range byPath {
		cards[i].ByPath = rank
	}
	out := make([]htmlFinding, len(cards))
	for _, i := range idx {
		out[cards[i].BySeverity] = cards[i]
	}
	return out
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
	}
	d.Findings = htmlCards(res.Findings, func(f scanners.Finding) htmlFinding {
		r := idx[f.RuleID]
		loc := f.Path
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", loc, f.Line)
		}
		title := r.Title
		if title == "" {
			title = f.RuleID
		}
		return htmlFinding{
			Severity: f.Severity.String(), RuleID: f.RuleID, Title: title, Check: f.Check, Target: f.Target, Location: loc,
			Why: r.Why, Fix: r.Fix, Layer: f.Layer, Commit: f.Commit,
			Suppressed: f.Suppressed, Verification: f.Verification, Fails: f.Suppressed == "" && h.o.FailOn != nil && f.Severity >= *h.o.FailOn,
		}
	})
	for c, n := range checks {
		d.Checks = append(d.Checks, htmlCount{c, n})
	}
	slices.SortFunc(d.Checks, func(a, b htmlCount) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range res.Errors {
		d.Errors = append(d.Errors, e.Error())
	}
	return htmlPage().Execute(w, d)
}
