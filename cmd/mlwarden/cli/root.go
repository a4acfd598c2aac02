// Package cli is mlwarden's command line: the only package that imports cobra.
// It parses flags into option structs and calls library code; it holds no
// logic of its own beyond that translation.
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/mlwarden/mlwarden/reports"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners/scan"
)

// Exit codes, as docs/architecture.md fixes them.
const (
	ExitOK       = scan.ExitOK       // nothing at or above --fail-on
	ExitFindings = scan.ExitFindings // findings at or above --fail-on
	ExitError    = scan.ExitError    // the run failed or a target could not be scanned in full
)

// BuildInfo is injected at build time.
type BuildInfo struct {
	Version, Commit, Date string
}

// app is what every command shares: the streams and build facts. Commands
// get it from their constructor, never from globals.
type app struct {
	build  BuildInfo
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// env, when set, stands in for the environment (tests).
	env func(string) (string, bool)
	// code is the exit code a command asks for without an error (1 for
	// findings); an error returned by a command always exits 2.
	code int
}

// exitError carries an explicit exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks a bad invocation (exit 2, with a hint to --help).
func usageError(format string, args ...any) error {
	return &exitError{code: ExitError, err: fmt.Errorf(format, args...)}
}

// Main runs the command line and returns the process exit code. SIGINT and
// SIGTERM cancel the run.
func Main(build BuildInfo, stdin io.Reader, stdout, stderr io.Writer, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return MainContext(ctx, build, stdin, stdout, stderr, args)
}

// MainContext runs the command line until ctx is done.
func MainContext(ctx context.Context, build BuildInfo, stdin io.Reader, stdout, stderr io.Writer, args []string) int {
	a := &app{build: build, stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "mlwarden: %s\n", reports.Escape(err.Error()))
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return ExitError
	}
	return a.code
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "mlwarden",
		Short: "Keep machine-learning supply chains clean",
		Long: `mlwarden scans what reaches a GPU cluster — container images, git repositories,
Slurm batch scripts and model files — for leaked secrets, unpinned dependencies,
dangerous pickles, missing signatures, CUDA builds the driver cannot run, and
risky runtime settings, before any of it runs.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%v (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(commands(a)...)
	return root
}
