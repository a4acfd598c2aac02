// Package slurmhook checks Slurm batch scripts at submission, for the
// job_submit/lua and cli_filter/lua hooks (deploy/slurm): a Checker runs
// the scan pipeline on one script as sbatch would run it and writes one
// short line per finding (or a report); Serve answers checks on a Unix
// socket so that a busy controller pays for setting the checks up once; Ask
// is its client.
package slurmhook

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// Request is one script to check, with how the job was submitted.
type Request struct {
	Name   string
	Script []byte
	// Env and Args are the submission's environment (NAME=VALUE) and
	// sbatch's command-line words; they override the script's directives.
	Env  []string
	Args []string
	// FailOn and Show, when set, override the checker's thresholds for
	// this request; NeverFail (fail-on none) allows whatever is found.
	FailOn    *scanners.Severity
	Show      *scanners.Severity
	NeverFail bool
}

// Checker checks scripts with one pipeline, set up once.
type Checker struct {
	Scanner *scan.Scanner
	// FailOn rejects (exit 1) at or above it; nil never rejects.
	FailOn *scanners.Severity
	// Show prints findings at or above it (default FailOn; with FailOn
	// nil, every finding); those below FailOn are printed as warnings.
	Show *scanners.Severity
	// Format is "text" (the hook's lines) or a report format.
	Format string
}

// Check checks one script, writes its lines (or report) to w and returns
// the exit code: 0 allow, 1 reject, 2 could not check. It returns by ctx's
// deadline whatever the script (exit 2, "could not check the script within
// its deadline"): job_submit.lua gives up after a few seconds, and a
// check that answers later holds every submission behind it.
func (c *Checker) Check(ctx context.Context, req Request, w io.Writer) int {
	code, _ := c.check(ctx, req, w)
	return code
}

// check is Check; done is closed once the pipeline's run is over, which
// may be after the answer (a run past the deadline goes on until it
// notices): the socket server holds the worker slot until then, so that
// late runs never add up past its workers.
func (c *Checker) check(ctx context.Context, req Request, w io.Writer) (int, <-chan struct{}) {
	type ran struct {
		res *scan.Result
		err error
	}
	ch := make(chan ran, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := c.Scanner.Run(ctx, scan.Target{Script: &scan.Script{Name: req.Name, Data: req.Script, Env: req.Env, Args: req.Args}})
		ch <- ran{res, err}
	}()
	select {
	case r := <-ch:
		return c.answer(req, r.res, r.err, w), done
	case <-ctx.Done():
		fmt.Fprintf(w, "mlwarden: could not check the script within its deadline: %s\n", ctx.Err())
		return scan.ExitError, done
	}
}

// answer writes a run's lines (or report) and returns its exit code.
func (c *Checker) answer(req Request, res *scan.Result, err error, w io.Writer) int {
	failOn, show := c.FailOn, c.Show
	if req.FailOn != nil {
		failOn, show = req.FailOn, req.FailOn
	}
	if req.NeverFail {
		failOn, show = nil, nil
	}
	if req.Show != nil {
		show = req.Show
	}
	if show == nil {
		show = failOn
	}
	if err != nil {
		fmt.Fprintf(w, "mlwarden: could not check the script: %s\n", oneLine(err.Error()))
		return scan.ExitError
	}
	code := scan.ExitCode(res.Result, failOn)
	if c.Format != "" && c.Format != "text" {
		if err := reports.Write(w, c.Format, res.Result, reports.Options{Rules: c.Scanner.Rules()}); err != nil {
			return scan.ExitError
		}
		return code
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "mlwarden: could not check the script: %s\n", oneLine(e.Message))
	}
	optsName := req.Name + scan.OptionsSuffix
	for _, f := range res.Findings {
		if f.Suppressed != "" || show != nil && f.Severity < *show {
			continue
		}
		where := fmt.Sprintf("line %d", f.Line)
		switch {
		case f.Target == optsName:
			where = "option " + res.Options[optsName][f.Line]
		case f.Line == 0:
			where = "script"
		}
		var rules []scanners.Rule // the finding's, described alone
		if r, ok := c.Scanner.Rule(f.RuleID); ok {
			rules = []scanners.Rule{r}
		}
		fmt.Fprintln(w, Line(f, where, rules, failOn == nil || f.Severity < *failOn))
	}
	return code
}

// Line is one finding as a terminal line:
// mlwarden: line 12: <title> in '<evidence>' — <fix> (rule <id>)
//
// The sbatch-* rules' messages already say what Slurm does with the line
// and how to fix it, in that form; they are printed as they are.
func Line(f scanners.Finding, where string, rules []scanners.Rule, warning bool) string {
	title, fix := f.Message, ""
	if i := slices.IndexFunc(rules, func(r scanners.Rule) bool { return r.ID == f.RuleID }); i >= 0 && !strings.HasPrefix(f.RuleID, "misconfig/sbatch-") {
		title, fix = rules[i].Title, rules[i].Fix
	}
	if strings.HasPrefix(f.RuleID, "misconfig/sbatch-") {
		f.Evidence = ""
	}
	var b strings.Builder
	b.WriteString("mlwarden: ")
	if warning {
		b.WriteString("warning: ")
	}
	b.WriteString(where)
	b.WriteString(": ")
	b.WriteString(oneLine(title))
	if f.Evidence != "" {
		fmt.Fprintf(&b, " in '%s'", oneLine(f.Evidence))
	}
	if fix != "" {
		b.WriteString(" — ")
		b.WriteString(oneLine(fix))
	}
	fmt.Fprintf(&b, " (rule %s)", f.RuleID)
	return b.String()
}

// oneLine makes s one terminal line: whitespace runs become one space and
// every other control character is escaped (reports.Escape), so that a
// script's bytes in a message or evidence cannot write to the user's
// terminal or forge another line of the hook's answer.
func oneLine(s string) string {
	return reports.Escape(strings.Join(strings.Fields(s), " "))
}
