//go:build !mlwarden_sbatch

package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

func newScanCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "scan TARGET...",
		Short: "Scan files, directories, images and repositories",
		Long: `Scan one or more targets with every enabled check and report the findings.

A TARGET is a path (file or directory) or a scheme-prefixed reference:
  registry:REF          pull an image from a registry
  oci:DIR               an OCI image layout
  docker-archive:FILE   a 'docker save' tarball
  git:URL-or-PATH       a git repository with its whole history
  hf:ORG/NAME[@REV]     a Hugging Face Hub repository (datasets/, spaces/ too),
                        read in ranges at one commit; a path in a Hub cache is
                        scanned as the repository at its snapshot's commit
  -                     one script read from standard input
A bare argument that is not an existing path and parses as an image reference
with a tag or digest is treated as registry:REF.

Exit codes: 0 nothing at or above --fail-on; 1 (or --exit-code) findings at
or above it; 2 the run failed or a target could not be scanned in full.`,
		Example: `  # Scan a project directory; fail the CI job on high or critical findings
  mlwarden scan .

  # Upload to GitHub code scanning
  mlwarden scan --format sarif --output mlwarden.sarif .

  # Only secrets and pins, machine-readable, failing on medium and above
  mlwarden scan --checks secrets,pins --format json --fail-on medium ./jobs

  # A model on the Hugging Face Hub at a commit, and every model in the local Hub cache
  mlwarden scan hf:org/model@0123456789abcdef0123456789abcdef01234567 ~/.cache/huggingface/hub

  # An image in a registry, and a repository's whole history
  mlwarden scan registry:registry.example.com/org/trainer:1.4 git:https://git.example.com/org/repo

  # Accept today's findings and fail only on new ones (the baseline is kept
  # outside the scanned tree, so that it is not scanned itself)
  mlwarden scan --format json -o ../mlwarden-baseline.json . ; mlwarden scan --baseline ../mlwarden-baseline.json .

  # A CycloneDX ML-BOM, a GitLab SAST report, JUnit for Jenkins, one HTML page
  mlwarden scan --format cyclonedx -o bom.cdx.json .
  mlwarden scan --format gitlab -o gl-sast-report.json .
  mlwarden scan --format junit -o mlwarden-junit.xml .
  mlwarden scan --format html -o mlwarden.html .

  # Only high and critical, leaving fixtures out; exit 3 on findings
  mlwarden scan --severity critical,high --skip-dirs testdata,fixtures --exit-code 3 .`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("scan needs at least one TARGET (see 'mlwarden scan --help')")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			code, err := runScan(c, a, args)
			a.code = code
			return err
		},
	}
	bindSettings(c, "scan")
	return c
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func useColor(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

func runScan(c *cobra.Command, a *app, args []string) (int, error) {
	v, err := a.configure(c, args)
	if err != nil {
		return ExitError, err
	}
	findingsCode := v.Int("exit-code")
	if findingsCode < 0 || findingsCode > 125 || findingsCode == ExitError {
		return ExitError, usageError("--exit-code %d: want 0 to 125, and not 2 (a scan that was not complete)", findingsCode)
	}
	liveOnly := v.Bool("fail-on-live-only")
	if liveOnly && !v.Bool("verify-secrets") {
		return ExitError, usageError("%s: --fail-on-live-only needs --verify-secrets (no secret is known live without it)", v.Value("fail-on-live-only").Where)
	}
	quiet := v.Bool("quiet")
	format := v.String("format")
	var bar *termProgress
	s, err := a.pipeline(v, func(o *scan.Options) {
		// A pre-commit hook's few small files: compile only the secret
		// rules they can hit.
		o.LazySecretRules = scan.FewSmallFiles(args)
		if !quiet && isTerminal(a.stderr) && os.Getenv("TERM") != "dumb" {
			bar = newTermProgress(a.stderr)
			o.Progress = bar
		}
		if format == "cyclonedx" {
			// A bill of materials lists every model file with its digest,
			// and the model files of every layer: the per-layer cache
			// replays findings only.
			o.HashComponents, o.Image.NoCache = true, true
		}
	})
	if err != nil {
		return ExitError, err
	}
	defer s.Close()
	var targets []scan.Target
	for _, t := range args {
		targets = append(targets, scan.Target{Ref: t})
	}
	start := time.Now()
	res, err := s.Run(c.Context(), targets...)
	if bar != nil {
		bar.Wait()
	}
	if err != nil {
		return ExitError, err
	}
	out := output{format: format, path: v.String("output"), showSuppressed: v.Bool("show-suppressed"), quiet: quiet}
	ropts := reports.Options{ToolVersion: a.build.Version, Rules: s.Rules(), ShowSuppressed: out.showSuppressed,
		FailOn: v.Severity("fail-on"), Start: start, End: time.Now(), Category: reports.Category(args)}
	if wd, err := os.Getwd(); err == nil {
		ropts.SourceRoot = wd
	}
	if err := writeReport(a, out, res.Result, ropts); err != nil {
		return ExitError, err
	}
	if err := c.Context().Err(); err != nil {
		return ExitError, fmt.Errorf("interrupted: %w", err)
	}
	code := scan.ExitCode(res.Result, v.Severity("fail-on"))
	if liveOnly {
		code = scan.ExitCodeLive(res.Result, v.Severity("fail-on"))
	}
	if code == ExitFindings {
		code = findingsCode
	}
	if code == ExitError && (out.path != "" || out.format != "text") {
		fmt.Fprintf(a.stderr, "mlwarden: %d target(s) or file(s) could not be scanned in full; see \"errors\" in the report\n", len(res.Errors))
	}
	return code, nil
}

// output is where and how a report is written.
type output struct {
	format, path   string
	showSuppressed bool
	quiet          bool // no summary line on standard error
}

// writeReport writes res in the chosen format to --output or standard output.
func writeReport(a *app, out output, res *scanners.Result, ropts reports.Options) error {
	w := a.stdout
	var f *os.File
	if out.path != "" && out.path != "-" {
		var err error
		if f, err = os.Create(out.path); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		w = f
	}
	ropts.Color = f == nil && out.format == "text" && useColor(w)
	if err := reports.Write(w, out.format, res, ropts); err != nil {
		if f != nil {
			f.Close()
		}
		return fmt.Errorf("write report: %w", err)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		if out.format != "text" && !out.quiet {
			fmt.Fprintln(a.stderr, reports.Summary(res))
		}
	}
	return nil
}
