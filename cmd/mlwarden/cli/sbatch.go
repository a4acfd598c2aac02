package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/policy"
	"github.com/mlwarden/mlwarden/scanners/secrets"
	"github.com/mlwarden/mlwarden/scanners/slurm"
	"github.com/mlwarden/mlwarden/scanners/source"
)

// sbatchChecks are the checks that apply to a batch script.
var sbatchChecks = []string{scanners.CheckSecrets, scanners.CheckPins, scanners.CheckMisconfig}

type sbatchOptions struct {
	failOn     string
	show       string
	format     string
	checks     string
	sbatchArgs []string
	sbatchEnv  []string
	config     string
	name       string
	serve      string
	connect    string
	timeout    time.Duration
	spank      []string
}

func newSbatchCmd(a *app) *cobra.Command {
	o := &sbatchOptions{}
	cmd := &cobra.Command{
		Use:   "sbatch [SCRIPT|-]",
		Short: "Check one Slurm batch script before it is submitted",
		Long: `Check one Slurm batch script (a path, or - for standard input) with every check
that applies to scripts, reading its #SBATCH directives as sbatch does. Made for
Slurm's job_submit/lua and cli_filter/lua hooks (see deploy/slurm): it prints one
short line per finding, nothing when the script is clean.

Exit status: 0 allow, 1 reject (a finding at or above --fail-on), 2 could not check.

Setting the checks up costs far more than checking one script. For a hook
that runs on every submission, start one long-lived checker with
--serve SOCKET and let the hook talk to it (job_submit.lua does, over
lua-socket), or run 'mlwarden sbatch --connect SOCKET', which falls back to
checking in-process when nothing answers.`,
		Example: `  mlwarden sbatch train.sbatch
  mlwarden sbatch - < train.sbatch
  mlwarden sbatch --sbatch-args "-p gpu --container-image=registry.example.com#nvidia/pytorch:24.01-py3" job.sh
  mlwarden sbatch --serve /run/mlwarden/sbatch.sock`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.serve != "" {
				if len(args) > 0 {
					return usageError("--serve takes no script")
				}
				return runSbatchServe(cmd.Context(), a, o, cmd.Flags().Changed("fail-on"))
			}
			target := "-"
			if len(args) == 1 {
				target = args[0]
			}
			return runSbatch(cmd, a, o, target)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.failOn, "fail-on", "high", "reject (exit 1) at or above this severity: critical, high, medium, low, info")
	f.StringVar(&o.show, "show", "", "print findings at or above this severity (default: --fail-on); those below --fail-on are printed as warnings")
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	f.StringVar(&o.checks, "checks", strings.Join(sbatchChecks, ","), "comma list of checks to run")
	f.StringArrayVar(&o.sbatchArgs, "sbatch-args", nil, "options given to sbatch on its command line, as one string (\"-p gpu --container-image=IMG\"); they override the script's directives")
	f.StringArrayVar(&o.sbatchEnv, "sbatch-env", nil, "NAME=VALUE of the submission's environment (SBATCH_* variables, _SLURM_SPANK_OPTION_* SPANK options); repeatable; they override the script's directives")
	f.StringVar(&o.config, "config", "", "policy file (.mlwarden.yaml format: ignore entries, fail-on)")
	f.StringVar(&o.name, "name", "", "name of the script in messages and the report (default: the path, or 'stdin')")
	f.StringVar(&o.serve, "serve", "", "serve checks on this Unix socket until stopped (for job_submit.lua)")
	f.StringVar(&o.connect, "connect", "", "ask the checker serving on this Unix socket; check in-process when it does not answer")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "with --serve: the most one check may take")
	f.StringArrayVar(&o.spank, "spank-option", nil, "an sbatch option the site's SPANK plugins add (pyxis' are known): NAME, or NAME= when it takes a value; repeatable")
	return cmd
}

// sbatchRequest is one script to check, with how the job was submitted.
type sbatchRequest struct {
	name   string
	script []byte
	env    []string
	args   []string
	failOn *scanners.Severity
	show   *scanners.Severity
}

// sbatchChecker holds the checks, set up once.
type sbatchChecker struct {
	checks []string
	scs    []scanners.Scanner
	rules  []scanners.Rule
	failOn scanners.Severity
	show   scanners.Severity
	format string
	cfg    *policy.Config
	popts  []slurm.ParseOption
}

func newSbatchChecker(o *sbatchOptions, failOnSet bool) (*sbatchChecker, error) {
	c := &sbatchChecker{format: o.format}
	var err error
	if c.failOn, err = scanners.ParseSeverity(o.failOn); err != nil {
		return nil, usageError("--fail-on: %v", err)
	}
	c.show = c.failOn
	if o.show != "" {
		if c.show, err = scanners.ParseSeverity(o.show); err != nil {
			return nil, usageError("--show: %v", err)
		}
	}
	if o.format != "text" && o.format != "json" {
		return nil, usageError("--format: unknown format %q (valid: text, json)", o.format)
	}
	if c.checks, err = catalog.ParseChecks(o.checks); err != nil {
		return nil, usageError("--checks: %v", err)
	}
	if o.config != "" {
		if c.cfg, err = policy.Load(o.config); err != nil {
			return nil, &exitError{code: ExitError, err: err}
		}
		if c.cfg.FailOn != nil && !failOnSet {
			c.failOn = c.cfg.FailOn.Severity
			if o.show == "" {
				c.show = c.failOn
			}
		}
	}
	var spank []slurm.OptionSpec
	for _, s := range o.spank {
		name, takesValue := strings.CutSuffix(s, "=")
		if strings.TrimLeft(name, "-") == "" || strings.ContainsAny(name, "= \t") {
			return nil, usageError("--spank-option: %q is not NAME or NAME=", s)
		}
		spank = append(spank, slurm.SpankOption(name, takesValue))
	}
	if len(spank) > 0 {
		c.popts = append(c.popts, slurm.WithSpankOptions(spank...))
	}
	copts := catalog.Options{Checks: c.checks, Slurm: []slurm.Option{slurm.WithSpank(spank...)}}
	if o.serve == "" {
		// One script per process: compile only the secret rules it can hit.
		copts.Secrets = append(copts.Secrets, secrets.WithLazyRules())
	}
	if c.scs, err = catalog.New(copts); err != nil {
		return nil, &exitError{code: ExitError, err: err}
	}
	c.rules = catalog.RulesOf(c.scs)
	return c, nil
}

func sbatchArgWords(list []string) ([]string, error) {
	var args []string
	for _, s := range list {
		w, err := slurm.SplitArgs(s)
		if err != nil {
			return nil, usageError("--sbatch-args: %v", err)
		}
		args = append(args, w...)
	}
	return args, nil
}

func runSbatch(cmd *cobra.Command, a *app, o *sbatchOptions, target string) error {
	args, err := sbatchArgWords(o.sbatchArgs)
	if err != nil {
		return err
	}
	for _, kv := range o.sbatchEnv {
		if !strings.Contains(kv, "=") {
			return usageError("--sbatch-env: %q is not NAME=VALUE", kv)
		}
	}
	req := sbatchRequest{name: o.name, env: o.sbatchEnv, args: args}
	if target == "-" {
		req.script, err = io.ReadAll(io.LimitReader(a.stdin, maxSbatchScript+1))
		if req.name == "" {
			req.name = "stdin"
		}
	} else {
		req.script, err = os.ReadFile(target)
		if req.name == "" {
			req.name = target
		}
	}
	if err != nil {
		return &exitError{code: ExitError, err: fmt.Errorf("read script: %w", err)}
	}
	if len(req.script) > maxSbatchScript {
		return &exitError{code: ExitError, err: fmt.Errorf("read script: larger than %d bytes", maxSbatchScript)}
	}

	if o.connect != "" && o.format == "text" {
		if code, out, err := sbatchAsk(cmd.Context(), o.connect, req, o, cmd.Flags().Changed("fail-on")); err == nil {
			a.stdout.Write(out)
			a.code = code
			return nil
		}
		// Nothing answers: check in-process, as without --connect.
	}
	c, err := newSbatchChecker(o, cmd.Flags().Changed("fail-on"))
	if err != nil {
		return err
	}
	a.code = c.check(cmd.Context(), req, a.stdout)
	return nil
}

// maxSbatchScript bounds the script read (Slurm's own default max_script_size
// is 4 MiB).
const maxSbatchScript = 16 << 20

// check checks one script, writes the lines (or the JSON report) to w and
// returns the exit code.
func (c *sbatchChecker) check(ctx context.Context, req sbatchRequest, w io.Writer) int {
	failOn, show := c.failOn, c.show
	if req.failOn != nil {
		failOn, show = *req.failOn, *req.failOn
	}
	if req.show != nil {
		show = *req.show
	}
	name := req.name
	srcs := []scanners.Source{source.OpenScript(name, bytes.NewReader(req.script))}

	// Options that come from the command line or the environment override
	// the script's: the checks see them as a second script made of those
	// directives, so that (say) the pins check judges the image the job
	// really gets.
	script := slurm.Parse(req.script, c.popts...)
	eff, argProblems := script.Effective(req.env, req.args, c.popts...)
	optsName := name + " (sbatch options)"
	optsScript, optsLines := sbatchOptionsScript(eff)
	if optsScript != nil {
		srcs = append(srcs, source.OpenScript(optsName, bytes.NewReader(optsScript)))
	}

	res := scanners.NewDispatcher(c.scs).Run(ctx, srcs...)
	suppressOverridden(res, script, eff, name)
	if slices.Contains(c.checks, scanners.CheckMisconfig) {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: name, TargetKind: scanners.KindScript, Path: name}
		for _, p := range argProblems {
			f := slurm.ProblemFinding(a, p, nil)
			f.Fingerprint = scanners.ComputeFingerprint(&f)
			res.Findings = append(res.Findings, f)
		}
	}
	if c.cfg != nil {
		policy.Apply(res, c.cfg.Ignore, nil, time.Now())
	}
	res.Summary = scanners.Summarize(res.Findings)

	code := ExitOK
	switch {
	case len(res.Errors) > 0:
		code = ExitError
	case res.Failed(failOn):
		code = ExitFindings
	}
	if c.format == "json" {
		if err := reports.Write(w, "json", res, reports.Options{}); err != nil {
			return ExitError
		}
		return code
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "mlwarden: could not check the script: %s\n", oneLine(e.Message))
	}
	for _, f := range res.Findings {
		if f.Suppressed != "" || f.Severity < show {
			continue
		}
		where := fmt.Sprintf("line %d", f.Line)
		switch {
		case f.Target == optsName:
			where = "option " + optsLines[f.Line]
		case f.Line == 0:
			where = "script"
		}
		fmt.Fprintln(w, sbatchLine(f, where, c.rules, f.Severity < failOn))
	}
	return code
}

// sbatchLine is one finding as a terminal line:
// mlwarden: line 12: <title> in '<evidence>' — <fix> (rule <id>)
//
// The sbatch-* rules' messages already say what Slurm does with the line
// and how to fix it, in that form; they are printed as they are.
func sbatchLine(f scanners.Finding, where string, rules []scanners.Rule, warning bool) string {
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

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// sbatchOptionsScript writes the settings that come from outside the script
// as a batch script of directives, one per line; lines maps each line to the
// option as the user gave it.
func sbatchOptionsScript(eff map[string]slurm.Setting) ([]byte, map[int]string) {
	var names []string
	for n, st := range eff {
		if st.Source != slurm.FromScript {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	lines := map[int]string{}
	for i, n := range names {
		st := eff[n]
		opt := "--" + n
		if st.HasValue {
			// One directive per line: a value cannot carry a line break.
			opt += "=" + strings.NewReplacer("\n", " ", "\r", " ").Replace(st.Value)
		}
		label := opt
		if st.Source == slurm.FromEnv {
			label = opt + " (from " + st.Origin + ")"
		}
		lines[i+2] = slurm.Evidence(label)
		b.WriteString("#SBATCH ")
		b.WriteString(quoteDirective(opt))
		b.WriteByte('\n')
	}
	return []byte(b.String()), lines
}

// quoteDirective quotes a word for an #SBATCH line when sbatch would
// otherwise split or cut it.
func quoteDirective(w string) string {
	if !strings.ContainsAny(w, " \t#'\"\\") {
		return w
	}
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	name, val, ok := strings.Cut(w, "=")
	if !ok {
		return `"` + esc.Replace(w) + `"`
	}
	return name + `="` + esc.Replace(val) + `"`
}

// suppressOverridden marks the pins and misconfig findings on #SBATCH lines
// whose every option the command line or environment overrides: the job does
// not get what those lines say. Secrets stay: a leaked token is leaked
// whether or not the option applies.
func suppressOverridden(res *scanners.Result, script *slurm.Script, eff map[string]slurm.Setting, name string) {
	overridden := map[int]string{}
	for _, d := range script.Directives {
		var names []string
		all := true
		for _, st := range script.Settings {
			if st.Line != d.Line || st.Component != 0 {
				continue
			}
			e, ok := eff[st.Name]
			if !ok || e.Source == slurm.FromScript {
				all = false
				break
			}
			names = append(names, "--"+st.Name)
		}
		if all && len(names) > 0 {
			overridden[d.Line] = strings.Join(names, ", ")
		}
	}
	for i := range res.Findings {
		f := &res.Findings[i]
		if f.Target != name || f.Suppressed != "" || f.Check == scanners.CheckSecrets || f.RuleID == slurm.RuleValueTruncated.ID {
			continue
		}
		if opts, ok := overridden[f.Line]; ok {
			f.Suppressed = "overridden: " + opts + " given on the sbatch command line or in the environment"
		}
	}
}

// The checker server: `mlwarden sbatch --serve SOCKET` sets the checks up
// once and answers one request per connection on a Unix socket, so that a
// submission costs a check, not a process start and a set-up (job_submit.lua
// talks to it with lua-socket; `mlwarden sbatch --connect` is the Go client).
//
// Request: netstrings ("<len>:<bytes>,"), read as key/value pairs: "name",
// "env" (NAME=VALUE, repeatable), "arg" (one word, repeatable), "fail-on",
// "show", and last "script". Response: "exit N\n", then the text lines.
// Netstrings because Lua 5.1 writes them with one string.format, and every
// byte of a script survives them.

func runSbatchServe(ctx context.Context, a *app, o *sbatchOptions, failOnSet bool) error {
	o.format = "text"
	c, err := newSbatchChecker(o, failOnSet)
	if err != nil {
		return err
	}
	// A socket left by a checker that died is removed; anything else there is
	// an error.
	if fi, err := os.Lstat(o.serve); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return &exitError{code: ExitError, err: fmt.Errorf("--serve: %s exists and is not a socket", o.serve)}
		}
		if conn, err := net.DialTimeout("unix", o.serve, time.Second); err == nil {
			conn.Close()
			return &exitError{code: ExitError, err: fmt.Errorf("--serve: a checker already serves on %s", o.serve)}
		}
		os.Remove(o.serve)
	}
	// Only the user running the checker (Slurm's SlurmUser) may connect.
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", o.serve)
	syscall.Umask(old)
	if err != nil {
		return &exitError{code: ExitError, err: fmt.Errorf("--serve: %w", err)}
	}
	defer os.Remove(o.serve)
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	fmt.Fprintf(a.stderr, "mlwarden: serving sbatch checks on %s (checks %s, fail-on %s)\n", o.serve, strings.Join(c.checks, ","), c.failOn)
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			start := time.Now()
			code := c.serveConn(ctx, conn, o.timeout)
			fmt.Fprintf(a.stderr, "mlwarden: checked a script: exit %d in %s\n", code, time.Since(start).Round(10*time.Microsecond))
		}()
	}
}

func (c *sbatchChecker) serveConn(ctx context.Context, conn net.Conn, timeout time.Duration) int {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	req, err := readSbatchRequest(bufio.NewReader(conn))
	if err != nil {
		fmt.Fprintf(conn, "exit %d\nmlwarden: bad request: %v\n", ExitError, err)
		return ExitError
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	code := c.check(cctx, req, &out)
	if cctx.Err() != nil {
		code = ExitError
		out.Reset()
		fmt.Fprintf(&out, "mlwarden: could not check the script within %s\n", timeout)
	}
	fmt.Fprintf(conn, "exit %d\n", code)
	conn.Write(out.Bytes())
	return code
}

func readNetstring(r *bufio.Reader, limit int) ([]byte, error) {
	n := 0
	for digits := 0; ; digits++ {
		b, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		if b == ':' && digits > 0 {
			break
		}
		if b < '0' || b > '9' || digits >= 9 {
			return nil, fmt.Errorf("malformed netstring")
		}
		n = n*10 + int(b-'0')
	}
	if n > limit {
		return nil, fmt.Errorf("field of %d bytes is larger than %d", n, limit)
	}
	buf := make([]byte, n+1)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	if buf[n] != ',' {
		return nil, fmt.Errorf("malformed netstring")
	}
	return buf[:n], nil
}

func readSbatchRequest(r *bufio.Reader) (sbatchRequest, error) {
	req := sbatchRequest{name: "job script"}
	for fields := 0; ; fields++ {
		if fields > 10000 {
			return req, fmt.Errorf("too many fields")
		}
		key, err := readNetstring(r, 64)
		if err != nil {
			return req, fmt.Errorf("read key: %w", err)
		}
		limit := 1 << 20
		if string(key) == "script" {
			limit = maxSbatchScript
		}
		val, err := readNetstring(r, limit)
		if err != nil {
			return req, fmt.Errorf("read %s: %w", key, err)
		}
		switch string(key) {
		case "script":
			req.script = val
			return req, nil
		case "name":
			req.name = string(val)
		case "env":
			req.env = append(req.env, string(val))
		case "arg":
			req.args = append(req.args, string(val))
		case "fail-on", "show":
			sev, err := scanners.ParseSeverity(string(val))
			if err != nil {
				return req, fmt.Errorf("%s: %w", key, err)
			}
			if string(key) == "fail-on" {
				req.failOn = &sev
			} else {
				req.show = &sev
			}
		default:
			return req, fmt.Errorf("unknown field %q", key)
		}
	}
}

func writeNetstring(w *bytes.Buffer, key string, val []byte) {
	fmt.Fprintf(w, "%d:%s,%d:", len(key), key, len(val))
	w.Write(val)
	w.WriteByte(',')
}

// sbatchAsk sends req to the checker on socket and returns its answer.
func sbatchAsk(ctx context.Context, socket string, req sbatchRequest, o *sbatchOptions, failOnSet bool) (int, []byte, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "unix", socket)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(o.timeout + 2*time.Second))
	var b bytes.Buffer
	writeNetstring(&b, "name", []byte(req.name))
	for _, e := range req.env {
		writeNetstring(&b, "env", []byte(e))
	}
	for _, a := range req.args {
		writeNetstring(&b, "arg", []byte(a))
	}
	if failOnSet {
		writeNetstring(&b, "fail-on", []byte(o.failOn))
	}
	if o.show != "" {
		writeNetstring(&b, "show", []byte(o.show))
	}
	writeNetstring(&b, "script", req.script)
	if _, err := conn.Write(b.Bytes()); err != nil {
		return 0, nil, err
	}
	resp, err := io.ReadAll(io.LimitReader(conn, 16<<20))
	if err != nil {
		return 0, nil, err
	}
	head, rest, _ := bytes.Cut(resp, []byte("\n"))
	var code int
	if _, err := fmt.Sscanf(string(head), "exit %d", &code); err != nil {
		return 0, nil, fmt.Errorf("bad answer from %s: %q", socket, head)
	}
	return code, rest, nil
}
