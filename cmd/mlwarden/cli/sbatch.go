package cli

import (
	"fmt"
	"github.com/mlwarden/mlwarden/reports"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/slurm"
	"github.com/mlwarden/mlwarden/server/slurmhook"
)

func newSbatchCmd(a *app) *cobra.Command {
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
			return runSbatch(cmd, a, args)
		},
	}
	bindSettings(cmd, "sbatch")
	return cmd
}

func runSbatch(cmd *cobra.Command, a *app, args []string) error {
	v, err := a.configure(cmd, nil)
	if err != nil {
		return err
	}
	if serve := v.String("serve"); serve != "" {
		if len(args) > 0 {
			return usageError("--serve takes no script")
		}
		return runSbatchServe(cmd, a, v, serve)
	}
	var words []string
	for _, s := range v.List("sbatch-args") {
		w, err := slurm.SplitArgs(s)
		if err != nil {
			return usageError("--sbatch-args: %v", err)
		}
		words = append(words, w...)
	}
	for _, kv := range v.List("sbatch-env") {
		if !strings.Contains(kv, "=") {
			return usageError("--sbatch-env: %q is not NAME=VALUE", kv)
		}
	}
	req := slurmhook.Request{Name: v.String("name"), Env: v.List("sbatch-env"), Args: words}
	if len(args) == 0 || args[0] == "-" {
		req.Script, err = io.ReadAll(io.LimitReader(a.stdin, slurmhook.MaxScript+1))
		if req.Name == "" {
			req.Name = "stdin"
		}
	} else {
		req.Script, err = os.ReadFile(args[0])
		if req.Name == "" {
			req.Name = args[0]
		}
	}
	if err != nil {
		return &exitError{code: ExitError, err: fmt.Errorf("read script: %w", err)}
	}
	if len(req.Script) > slurmhook.MaxScript {
		return &exitError{code: ExitError, err: fmt.Errorf("read script: larger than %d bytes", slurmhook.MaxScript)}
	}
	// One small script per process: the process exits when it is done, and
	// the one collection the default heap goal made it run cost about a
	// fifth of its CPU (docs/design/sbatch-hook.md). Up to smallScript the
	// heap may grow to five times what is live (GOGC=400), still bounded
	// by the script's size; a GOGC the admin set is kept.
	if _, set := os.LookupEnv("GOGC"); !set && len(req.Script) <= smallScript {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	format := v.String("format")
	if sock := v.String("connect"); sock != "" && format == "text" {
		if v.Set("fail-on") {
			req.FailOn, req.NeverFail = v.Severity("fail-on"), v.Severity("fail-on") == nil
		}
		req.Show = v.Severity("show")
		if code, out, err := slurmhook.Ask(cmd.Context(), sock, req, v.Duration("timeout")+2e9); err == nil {
			a.stdout.Write(out)
			a.code = code
			return nil
		}
		// Nothing answers: check in-process, as without --connect.
		req.FailOn, req.Show, req.NeverFail = nil, nil, false
	}
	// One script per process: compile only the secret rules it can hit.
	c, err := a.sbatchChecker(v, true)
	if err != nil {
		return err
	}
	defer c.Scanner.Close()
	w, closeOut, err := openOutput(a, v.String("output"))
	if err != nil {
		return err
	}
	a.code = c.Check(cmd.Context(), req, w)
	return closeOut()
}

// smallScript is the largest script checked with a larger heap goal in
// one-script mode.
const smallScript = 256 << 10

// sbatchChecker builds the checker from the resolved settings.
func (a *app) sbatchChecker(v *config.Values, lazy bool) (*slurmhook.Checker, error) {
	s, err := a.pipeline(v, func(o *scan.Options) { o.LazySecretRules = lazy })
	if err != nil {
		return nil, err
	}
	return &slurmhook.Checker{Scanner: s, FailOn: v.Severity("fail-on"), Show: v.Severity("show"), Format: v.String("format")}, nil
}

// openOutput opens --output (standard output when empty or "-").
func openOutput(a *app, path string) (io.Writer, func() error, error) {
	if path == "" || path == "-" {
		return a.stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, &exitError{code: ExitError, err: fmt.Errorf("--output: %w", err)}
	}
	return f, f.Close, nil
}

// runSbatchServe serves checks on the socket until the command is stopped.
func runSbatchServe(cmd *cobra.Command, a *app, v *config.Values, sock string) error {
	if f := v.String("format"); f != "text" {
		return usageError("--serve answers in the text format only (not %s)", f)
	}
	c, err := a.sbatchChecker(v, false)
	if err != nil {
		return err
	}
	defer c.Scanner.Close()
	l, err := slurmhook.Listen(sock)
	if err != nil {
		return &exitError{code: ExitError, err: fmt.Errorf("--serve: %w", err)}
	}
	defer os.Remove(sock)
	workers := v.Int("workers")
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	failOn := "none"
	if f := c.FailOn; f != nil {
		failOn = f.String()
	}
	fmt.Fprintf(a.stderr, "mlwarden: serving sbatch checks on %s (checks %s, fail-on %s)\n", sock, strings.Join(c.Scanner.Checks(), ","), failOn)
	srv := &slurmhook.Server{Checker: c, Timeout: v.Duration("timeout"), Workers: workers,
		Log: func(format string, args ...any) {
			fmt.Fprintf(a.stderr, "mlwarden: %s\n", reports.Escape(fmt.Sprintf(format, args...)))
		}}
	return srv.Serve(cmd.Context(), l)
}
