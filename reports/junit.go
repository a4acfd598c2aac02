//go:build !mlwarden_sbatch

package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// junitWriter writes JUnit XML as Jenkins, GitLab and Azure read it: one
// testsuite per target, one testcase per rule that ran (a rule without
// findings passes; Options.Rules are the rules that ran), one failure per
// unsuppressed finding at or above --fail-on. Findings below it and
// suppressed ones are listed in the testcase's system-out, so they are
// seen without failing. What could not be scanned is an error in a
// testcase "mlwarden/scan" of its target (errors of the run as a whole in
// a suite of their own), as exit 2 is.
type junitWriter struct{ o Options }

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string         `xml:"name,attr"`
	Classname string         `xml:"classname,attr"`
	File      string         `xml:"file,attr,omitempty"`
	Failures  []junitFailure `xml:"failure"`
	Errors    []junitFailure `xml:"error"`
	SystemOut string         `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

func (j *junitWriter) Write(w io.Writer, res *scanners.Result) error {
	idx := ruleIndex(j.o.Rules)
	rules := slices.Clone(j.o.Rules)
	for _, r := range usedRules(res, idx) {
		if _, ok := idx[r.ID]; !ok {
			rules = append(rules, r)
		}
	}
	slices.SortFunc(rules, func(a, b scanners.Rule) int { return strings.Compare(a.ID, b.ID) })
	out := junitSuites{Name: "mlwarden"}
	for _, t := range res.Targets {
		s := junitSuite{Name: t.Name, Properties: []junitProperty{{"kind", string(t.Kind)}}}
		if t.Digest != "" {
			s.Properties = append(s.Properties, junitProperty{"digest", t.Digest})
		}
		for _, n := range t.Notes {
			s.Properties = append(s.Properties, junitProperty{"note", n})
		}
		for _, r := range rules {
			c := junitCase{Name: r.ID, Classname: t.Name}
			var out []string
			for _, f := range res.Findings {
				if f.Target != t.Name || f.RuleID != r.ID {
					continue
				}
				if f.Suppressed == "" && j.o.FailOn != nil && f.Severity >= *j.o.FailOn {
					if c.File == "" {
						c.File = f.Path
					}
					c.Failures = append(c.Failures, junitFailure{Message: junitMessage(f), Type: f.Severity.String(), Body: junitBody(f, r)})
					continue
				}
				line := junitMessage(f)
				if f.Suppressed != "" {
					line += " (suppressed: " + f.Suppressed + ")"
				}
				out = append(out, line)
			}
			c.SystemOut = strings.Join(out, "\n")
			s.Failures += len(c.Failures)
			s.Cases = append(s.Cases, c)
		}
		if c := junitErrors(res.Errors, t.Name); len(c.Errors) > 0 {
			s.Errors += len(c.Errors)
			s.Cases = append(s.Cases, c)
		}
		s.Tests = len(s.Cases)
		out.Suites = append(out.Suites, s)
	}
	// Errors of the run as a whole, or of targets that could not be opened.
	known := map[string]bool{}
	for _, t := range res.Targets {
		known[t.Name] = true
	}
	var orphans []scanners.Error
	for _, e := range res.Errors {
		if !known[e.Target] {
			orphans = append(orphans, e)
		}
	}
	if len(orphans) > 0 {
		c := junitErrors(orphans, "")
		out.Suites = append(out.Suites, junitSuite{Name: "mlwarden", Tests: 1, Errors: len(c.Errors), Cases: []junitCase{c}})
	}
	for _, s := range out.Suites {
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitErrors is the testcase that carries what could not be scanned: errs
// of target (all of errs when target is "").
func junitErrors(errs []scanners.Error, target string) junitCase {
	c := junitCase{Name: "mlwarden/scan", Classname: target}
	if target == "" {
		c.Classname = "mlwarden"
	}
	for _, e := range errs {
		if target != "" && e.Target != target {
			continue
		}
		c.Errors = append(c.Errors, junitFailure{Message: xmlText(e.Error()), Type: "not scanned in full", Body: xmlText(e.Error())})
	}
	return c
}

func junitMessage(f scanners.Finding) string {
	loc := f.Path
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, f.Line)
	}
	if loc != "" {
		loc += ": "
	}
	return xmlText(fmt.Sprintf("[%s] %s%s", strings.ToUpper(f.Severity.String()), loc, f.Message))
}

func junitBody(f scanners.Finding, r scanners.Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", f.Message)
	if r.Title != "" {
		fmt.Fprintf(&b, "rule: %s (%s)\n", r.ID, r.Title)
	}
	if r.Why != "" {
		fmt.Fprintf(&b, "why: %s\n", r.Why)
	}
	if r.Fix != "" {
		fmt.Fprintf(&b, "fix: %s\n", r.Fix)
	}
	for _, kv := range [][2]string{{"path", f.Path}, {"layer", f.Layer}, {"commit", f.Commit}, {"evidence", f.Evidence}, {"fingerprint", f.Fingerprint}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s: %s\n", kv[0], kv[1])
		}
	}
	if f.Line > 0 {
		fmt.Fprintf(&b, "line: %d\n", f.Line)
	}
	return xmlText(b.String())
}

// xmlText drops what XML 1.0 cannot hold (control characters but tab and
// newline, invalid UTF-8), which encoding/xml would write as U+FFFD or
// refuse; the rest it escapes itself.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF:
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
