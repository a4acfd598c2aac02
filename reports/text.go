package reports

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

type textWriter struct{ o Options }

const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
)

var sevColor = map[scanners.Severity]string{
	scanners.SeverityCritical: "\x1b[1;35m",
	scanners.SeverityHigh:     "\x1b[1;31m",
	scanners.SeverityMedium:   "\x1b[33m",
	scanners.SeverityLow:      "\x1b[36m",
	scanners.SeverityInfo:     "\x1b[2m",
}

func (t *textWriter) paint(code, s string) string {
	if !t.o.Color || code == "" {
		return s
	}
	return code + s + ansiReset
}

// Write prints findings grouped by target, then severity, then path; errors
// after them; and a one-line summary at the end. Everything that came from
// the scanned content is escaped (Escape), so one finding is always the lines
// mlwarden wrote and nothing reaches the terminal as a control sequence.
func (t *textWriter) Write(w io.Writer, res *scanners.Result) error {
	bw := bufio.NewWriter(w)
	idx := ruleIndex(t.o.Rules)
	for _, tg := range res.Targets {
		var mine []scanners.Finding
		for _, f := range res.Findings {
			if f.Target == tg.Name && (f.Suppressed == "" || t.o.ShowSuppressed) {
				mine = append(mine, f)
			}
		}
		head := fmt.Sprintf("%s (%s)", Escape(tg.Name), Escape(string(tg.Kind)))
		if tg.Digest != "" {
			head += " " + Escape(tg.Digest)
		}
		fmt.Fprintln(bw, t.paint(ansiBold, head))
		for _, n := range tg.Notes {
			fmt.Fprintf(bw, "  note: %s\n", Escape(n))
		}
		if len(mine) == 0 {
			fmt.Fprintln(bw, "  no findings")
		}
		first := true
		for _, f := range mine {
			if f.Verification != scanners.VerificationLive {
				continue
			}
			if first {
				fmt.Fprintf(bw, "  %s\n", t.paint(sevColor[scanners.SeverityCritical], "LIVE (the provider accepted these credentials)"))
				first = false
			}
			t.finding(bw, f, idx)
		}
		for _, sev := range scanners.Severities() {
			first := true
			for _, f := range mine {
				if f.Severity != sev || f.Verification == scanners.VerificationLive {
					continue
				}
				if first {
					fmt.Fprintf(bw, "  %s\n", t.paint(sevColor[sev], strings.ToUpper(sev.String())))
					first = false
				}
				t.finding(bw, f, idx)
			}
		}
		fmt.Fprintln(bw)
	}
	if len(res.Errors) > 0 {
		fmt.Fprintln(bw, t.paint(ansiBold, "Errors (not scanned in full)"))
		for _, e := range res.Errors {
			fmt.Fprintf(bw, "  %s\n", Escape(e.Error()))
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintln(bw, Summary(res))
	return bw.Flush()
}

func (t *textWriter) finding(w io.Writer, f scanners.Finding, idx map[string]scanners.Rule) {
	loc := Escape(f.Path)
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, f.Line)
	}
	title := f.RuleID
	if r, ok := idx[f.RuleID]; ok && r.Title != "" {
		title = r.Title + " (" + f.RuleID + ")"
	}
	fmt.Fprintf(w, "    %s  %s\n", loc, t.paint(ansiBold, Escape(title)))
	fmt.Fprintf(w, "      %s\n", Escape(f.Message))
	var extra []string
	if f.Evidence != "" {
		extra = append(extra, "evidence: "+f.Evidence)
	}
	if f.Layer != "" {
		extra = append(extra, "layer: "+f.Layer)
	}
	if f.Commit != "" {
		extra = append(extra, "commit: "+f.Commit)
	}
	if f.Verification != "" {
		extra = append(extra, "verification: "+f.Verification)
	}
	if f.Suppressed != "" {
		extra = append(extra, "suppressed: "+f.Suppressed)
	}
	for _, e := range extra {
		fmt.Fprintf(w, "      %s\n", t.paint(ansiDim, Escape(e)))
	}
}

// Summary is the one-line summary: counts by severity, suppressed findings,
// findings hidden by --severity, paths skipped by --skip-dirs/--skip-files,
// and errors.
func Summary(res *scanners.Result) string {
	s := res.Summary
	var parts []string
	for _, sev := range scanners.Severities() {
		parts = append(parts, fmt.Sprintf("%d %s", s.Count(sev), sev))
	}
	noun := "targets"
	if len(res.Targets) == 1 {
		noun = "target"
	}
	line := fmt.Sprintf("mlwarden: %d %s, %s", len(res.Targets), noun, strings.Join(parts, ", "))
	if s.Suppressed > 0 {
		line += fmt.Sprintf(" (%d suppressed)", s.Suppressed)
	}
	if s.Hidden > 0 {
		line += fmt.Sprintf("; %d hidden by --severity", s.Hidden)
	}
	if s.PresentBefore > 0 {
		line += fmt.Sprintf("; %d already present before (--new-only)", s.PresentBefore)
	}
	skipped := 0
	for _, t := range res.Targets {
		skipped += t.Skipped
	}
	if skipped > 0 {
		line += fmt.Sprintf("; %d paths skipped", skipped)
	}
	switch n := len(res.Errors); n {
	case 0:
	case 1:
		line += "; 1 error"
	default:
		line += fmt.Sprintf("; %d errors", n)
	}
	return line
}
