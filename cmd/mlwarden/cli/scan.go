package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/cuda"
	"github.com/mlwarden/mlwarden/scanners/policy"
	"github.com/mlwarden/mlwarden/scanners/secrets"
	"github.com/mlwarden/mlwarden/scanners/signatures"
	"github.com/mlwarden/mlwarden/scanners/source"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// outputOptions is the flag group for where and how results are written.
type outputOptions struct {
	format         string
	output         string
	failOn         string
	showSuppressed bool
}

func (o *outputOptions) register(c *cobra.Command) {
	c.Flags().StringVarP(&o.format, "format", "f", "text", "output format: "+strings.Join(reports.Formats, ", "))
	c.Flags().StringVarP(&o.output, "output", "o", "", "write the report to this file instead of standard output")
	c.Flags().StringVar(&o.failOn, "fail-on", "high", "exit 1 when a finding is at or above this severity: critical, high, medium, low, info, or none")
	c.Flags().BoolVar(&o.showSuppressed, "show-suppressed", false, "list suppressed findings in the text format too")
}

// failSeverity parses --fail-on; ok is false for "none".
func failSeverity(s string) (sev scanners.Severity, ok bool, err error) {
	if strings.EqualFold(s, "none") {
		return 0, false, nil
	}
	sev, err = scanners.ParseSeverity(s)
	if err != nil {
		return 0, false, usageError("--fail-on: %v, or none", err)
	}
	return sev, true, nil
}

// scanOptions is the flag group of `mlwarden scan`.
type scanOptions struct {
	out           outputOptions
	checks        string
	config        string
	baseline      string
	maxFileSize   string
	secretsConfig string
	workers       int
	// image targets
	platform     string
	insecure     []string
	noCache      bool
	cacheMaxSize string
	// cuda
	hostFile  string
	inventory string
}

func newScanCmd(a *app) *cobra.Command {
	var o scanOptions
	c := &cobra.Command{
		Use:   "scan TARGET...",
		Short: "Scan files, directories, images and repositories",
		Long: `Scan one or more targets with every enabled check and report the findings.

A TARGET is a path (file or directory) or a scheme-prefixed reference:
  registry:REF          pull an image from a registry
  oci:DIR               an OCI image layout
  docker-archive:FILE   a 'docker save' tarball
  git:URL-or-PATH       a git repository with its whole history
  -                     one script read from standard input
A bare argument that is not an existing path and parses as an image reference
with a tag or digest is treated as registry:REF.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it;
2 the run failed or a target could not be scanned in full.`,
		Example: `  # Scan a project directory; fail the CI job on high or critical findings
  mlwarden scan .

  # Upload to GitHub code scanning
  mlwarden scan --format sarif --output mlwarden.sarif .

  # Only secrets and pins, machine-readable, failing on medium and above
  mlwarden scan --checks secrets,pins --format json --fail-on medium ./jobs

  # An image in a registry, and a repository's whole history
  mlwarden scan registry:registry.example.com/org/trainer:1.4 git:https://git.example.com/org/repo

  # Accept today's findings and fail only on new ones
  mlwarden scan --format json -o baseline.json . ; mlwarden scan --baseline baseline.json .`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("scan needs at least one TARGET (see 'mlwarden scan --help')")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			code, err := runScan(c.Context(), a, &o, c.Flags().Changed("fail-on"), c.Flags().Changed("checks"), args)
			a.code = code
			return err
		},
	}
	o.out.register(c)
	f := c.Flags()
	f.StringVar(&o.checks, "checks", "all", "comma list of checks to run: "+strings.Join(catalog.Names(), ", "))
	f.StringVar(&o.config, "config", "", "config file (default: "+policy.FileName+" in the scanned directory, if present)")
	f.StringVar(&o.baseline, "baseline", "", "a previous JSON report: its findings are suppressed")
	f.StringVar(&o.maxFileSize, "max-file-size", "64GiB", "largest file to scan (e.g. 500MB, 2GiB); larger files are reported as errors")
	f.StringVar(&o.secretsConfig, "secrets-config", "", "extra secret rules in gitleaks TOML format, extending the built-in set")
	f.IntVar(&o.workers, "workers", 0, "files and checks to run at once (default: the number of CPUs)")
	f.StringVar(&o.platform, "platform", "", "image platform os/arch[/variant], or all (default: this host's)")
	f.StringSliceVar(&o.insecure, "insecure-registry", nil, "registry HOST[:PORT] to reach over plain HTTP (repeatable; loopback always is)")
	f.BoolVar(&o.noCache, "no-cache", false, "do not use or fill the per-layer result cache")
	f.StringVar(&o.cacheMaxSize, "cache-max-size", "2GiB", "bound of the per-layer result cache; least recently used entries go first (0: no bound)")
	f.StringVar(&o.hostFile, "host", "", "cuda check: host facts file (as 'mlwarden cuda host --format yaml' prints)")
	f.StringVar(&o.inventory, "inventory", "", "cuda check: inventory of named host files (node pools)")
	return c
}

// parseSize reads a byte size: a number with an optional unit (KB, MB, GB,
// TB in powers of 1000; K, M, G, T, KiB, MiB, GiB, TiB in powers of 1024).
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
	}
	num, mult := strings.ToLower(strings.TrimSpace(s)), 1.0
	for _, u := range units {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (use e.g. 500MB or 2GiB)", s)
	}
	return int64(n * mult), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func useColor(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// rulesVersion keys caches of results: it changes when anything that can
// change a finding changes — the binary, the enabled checks, and the files
// that configure them (config, extra secret rules, CUDA host facts).
func rulesVersion(b BuildInfo, checks []string, files ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", b.Version, b.Commit, strings.Join(checks, ","))
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprintf(h, "%d\x00%d\x00", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		data, _ := os.ReadFile(f) // a missing file hashes as empty; the check reports it
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func runScan(ctx context.Context, a *app, o *scanOptions, failOnSet, checksSet bool, targets []string) (int, error) {
	if _, err := reports.New(o.out.format, reports.Options{}); err != nil {
		return ExitError, usageError("--format: %v", err)
	}
	failOn, failEnabled, err := failSeverity(o.out.failOn)
	if err != nil {
		return ExitError, err
	}
	checks, err := catalog.ParseChecks(o.checks)
	if err != nil {
		return ExitError, usageError("--checks: %v", err)
	}
	maxSize, err := parseSize(o.maxFileSize)
	if err != nil {
		return ExitError, usageError("--max-file-size: %v", err)
	}
	cacheMax, err := parseSize(o.cacheMaxSize)
	if err != nil {
		return ExitError, usageError("--cache-max-size: %v", err)
	}
	if cacheMax == 0 {
		cacheMax = -1 // no bound
	}
	cfg, err := policy.Find(o.config, targets)
	if err != nil {
		return ExitError, err
	}
	if err := cfg.ValidateChecks(catalog.Names()); err != nil {
		return ExitError, err
	}
	if !checksSet && len(cfg.Checks) > 0 {
		checks = cfg.Checks
	}
	if !failOnSet && cfg.FailOn != nil {
		failOn, failEnabled = cfg.FailOn.Severity, true
	}
	if cfg.MaxFileSize != "" && !flagChanged(o.maxFileSize, "64GiB") {
		if maxSize, err = parseSize(cfg.MaxFileSize); err != nil {
			return ExitError, fmt.Errorf("config %s: max-file-size: %v", cfg.Path, err)
		}
	}
	baseline := map[string]bool{}
	if b := firstNonEmpty(o.baseline, cfg.Baseline); b != "" {
		f, err := os.Open(b)
		if err != nil {
			return ExitError, fmt.Errorf("--baseline: %w", err)
		}
		prev, err := reports.ReadJSON(f)
		f.Close()
		if err != nil {
			return ExitError, fmt.Errorf("--baseline %s: %w", b, err)
		}
		baseline = policy.Baseline(prev)
	}

	copts := catalog.Options{Checks: checks, SecretsConfig: o.secretsConfig}
	if fewSmallFiles(targets) {
		// A pre-commit hook's few files: compile only the secret rules
		// they can hit.
		copts.Secrets = append(copts.Secrets, secrets.WithLazyRules())
	}
	switch {
	case o.hostFile != "":
		copts.CUDA = append(copts.CUDA, cuda.WithHostFile(o.hostFile))
	case o.inventory != "":
		copts.CUDA = append(copts.CUDA, cuda.WithInventory(o.inventory))
	default:
		copts.CUDA = append(copts.CUDA, cuda.WithLocalHost())
	}
	var sigPolicy signatures.Policy
	if err := cfg.DecodeSection(&cfg.Signatures, "signatures", &sigPolicy); err != nil {
		return ExitError, err
	}
	if cfg.Path != "" {
		// Key and root paths in the policy are relative to the config file.
		sigPolicy = sigPolicy.Resolve(filepath.Dir(cfg.Path))
	}
	copts.Signatures = append(copts.Signatures, signatures.WithPolicy(sigPolicy))
	scs, err := catalog.New(copts)
	if err != nil {
		return ExitError, err
	}
	defer catalog.Close(scs)

	workers := o.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sopts := source.Options{MaxFileSize: maxSize, Workers: workers}
	sopts.Image = image.Options{Platform: o.platform, Insecure: o.insecure, NoCache: o.noCache, CacheMaxBytes: cacheMax, RulesVersion: rulesVersion(a.build, checks, cfg.Path, o.secretsConfig, o.hostFile, o.inventory)}
	if isTerminal(a.stderr) {
		sopts.Image.Progress = a.stderr
	}
	var srcs []scanners.Source
	var openErrs []scanners.Error
	for _, t := range targets {
		if t == "-" {
			srcs = append(srcs, source.OpenScript("stdin", a.stdin))
			continue
		}
		s, err := source.Open(ctx, t, sopts)
		if err != nil {
			openErrs = append(openErrs, scanners.Error{Target: t, Message: err.Error()})
			continue
		}
		srcs = append(srcs, s)
	}
	res := scanners.NewDispatcher(scs, scanners.WithWorkers(workers)).Run(ctx, srcs...)
	res.Errors = append(openErrs, res.Errors...)
	applyGitleaksIgnores(res, srcs, scs)
	for _, w := range policy.Apply(res, cfg.Ignore, baseline, time.Now()) {
		fmt.Fprintf(a.stderr, "mlwarden: warning: %s\n", w)
	}

	ropts := reports.Options{ToolVersion: a.build.Version, Rules: catalog.RulesOf(scs), ShowSuppressed: o.out.showSuppressed}
	if err := writeReport(a, o.out, res, ropts); err != nil {
		return ExitError, err
	}
	if err := ctx.Err(); err != nil {
		return ExitError, fmt.Errorf("interrupted: %w", err)
	}
	switch {
	case len(res.Errors) > 0:
		if o.out.output != "" || o.out.format != "text" {
			fmt.Fprintf(a.stderr, "mlwarden: %d target(s) or file(s) could not be scanned in full; see \"errors\" in the report\n", len(res.Errors))
		}
		return ExitError, nil
	case failEnabled && res.Failed(failOn):
		return ExitFindings, nil
	}
	return ExitOK, nil
}

// writeReport writes res in the chosen format to --output or standard output.
func writeReport(a *app, out outputOptions, res *scanners.Result, ropts reports.Options) error {
	w := a.stdout
	var f *os.File
	if out.output != "" && out.output != "-" {
		var err error
		if f, err = os.Create(out.output); err != nil {
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
		if out.format != "text" {
			fmt.Fprintln(a.stderr, reports.Summary(res))
		}
	}
	return nil
}

func flagChanged(v, def string) bool { return v != def }

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// applyGitleaksIgnores honours a .gitleaksignore at the root of each
// scanned directory or local repository, as gitleaks does, so that a
// project moving to mlwarden keeps its reviewed exceptions.
func applyGitleaksIgnores(res *scanners.Result, srcs []scanners.Source, scs []scanners.Scanner) {
	var sec *secrets.Scanner
	for _, sc := range scs {
		if s, ok := sc.(*secrets.Scanner); ok {
			sec = s
		}
	}
	if sec == nil {
		return
	}
	for _, src := range srcs {
		t := src.Target()
		root := ""
		switch t.Kind {
		case scanners.KindDir:
			root = strings.TrimPrefix(t.Name, "dir:")
		case scanners.KindRepo:
			root = strings.TrimPrefix(t.Name, "git:")
		}
		if root == "" {
			continue
		}
		p := filepath.Join(root, secrets.GitleaksIgnoreFile)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
			continue // a remote repository's, or none
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		secrets.ParseGitleaksIgnore(data).Apply(res, t.Name, sec.GitleaksRuleID)
	}
}

// fewSmallFiles reports whether the targets are a handful of small local
// files (a pre-commit hook's), where compiling every secret rule up front
// costs more than the scan.
func fewSmallFiles(targets []string) bool {
	if len(targets) == 0 || len(targets) > 8 {
		return false
	}
	var total int64
	for _, t := range targets {
		fi, err := os.Stat(t)
		if err != nil || !fi.Mode().IsRegular() {
			return false // a directory, another scheme, or nothing
		}
		total += fi.Size()
	}
	return total <= 256<<10
}
