//go:build !mlwarden_sbatch

package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/scanners/sweep"
)

func newSweepCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "sweep PATTERN...",
		Short: "Scan every image of a registry or model of a Hub organisation, in shards",
		Long: `sweep lists the targets the patterns name, splits them into shards in a
stable order (sorted, then round-robin), and scans one shard through the same
pipeline, settings and report formats as 'mlwarden scan' — or prints a
Kubernetes Indexed Job that scans one shard per pod (--emit-job).

A PATTERN is:
  registry:HOST/REPO-GLOB[:TAG-GLOB]  repositories from the registry's catalog
                                      (* within a path segment, ** across them)
                                      and their tags (default: every tag)
  hf:ORG/GLOB                         a Hub organisation's models (hf:datasets/ORG/*,
                                      hf:spaces/ORG/* too)
  @FILE                               one target a line (@- reads standard input)
  TARGET                              any target 'mlwarden scan' takes

The shard is --shard N/M (0-based), or the pod's $JOB_COMPLETION_INDEX of
--shards M (or $JOB_COMPLETIONS). With a shared --cache-backend (redis://),
pods share image layers, and a target whose result for this rules version is
in the cache at the digest it has now is not scanned again: its kept result
is reported with a note (resumable; --no-cache scans everything). Each shard's
JSON report goes to --report-dir; 'mlwarden sweep merge' joins them.

Exit codes as for scan.`,
		Example: `  # Every tag of every repository under ml/ on a registry, in one process
  mlwarden sweep 'registry:registry.example.com/ml/**'

  # Shard 2 of 4, its report kept for merging
  mlwarden sweep --shard 2/4 --report-dir reports/ 'registry:registry.example.com/ml/**:v*'

  # A nightly Job of 16 pods sharing a Redis cache (the URL with its password
  # in the Secret as MLWARDEN_CACHE_BACKEND), reports on a shared volume
  mlwarden sweep --emit-job --shards 16 --job-secret mlwarden-cache --job-pvc sweep-reports \
    'registry:registry.example.com/**' hf:example-org/* | kubectl apply -f -

  # One report of all shards
  mlwarden sweep merge --format sarif -o sweep.sarif reports/*.json`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("sweep needs at least one PATTERN (see 'mlwarden sweep --help')")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			code, err := runSweep(c, a, args)
			a.code = code
			return err
		},
	}
	bindSettings(c, config.CmdSweep)
	merge := &cobra.Command{
		Use:   "merge REPORT...",
		Short: "Join the JSON reports of a sweep's shards into one report",
		Long: `merge reads JSON reports (mlwarden sweep --report-dir, or scan --format json) of
disjoint targets and writes them as one report, in any format scan writes, as
one scan of all their targets would. A target in two reports is an error.
Exit codes as for scan (--fail-on).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("sweep merge needs at least one REPORT")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			code, err := runSweepMerge(c, a, args)
			a.code = code
			return err
		},
	}
	bindSettings(merge, config.CmdSweepMerge)
	c.AddCommand(merge)
	return c
}

// sweepLister is the lister the settings describe.
func (a *app) sweepLister(v *config.Values) *sweep.Lister {
	l := &sweep.Lister{Insecure: v.List("insecure-registry"), HubEndpoint: v.String("hf-endpoint")}
	if v.Has("network-timeout") {
		if l.NetworkTimeout = v.Duration("network-timeout"); l.NetworkTimeout == 0 {
			l.NetworkTimeout = -1 // no bound
		}
	}
	if tok, ok := a.lookupEnv("HF_TOKEN"); ok {
		l.HubToken = tok
	}
	return l
}

func runSweep(c *cobra.Command, a *app, args []string) (int, error) {
	v, err := a.configure(c, nil)
	if err != nil {
		return ExitError, err
	}
	findingsCode := v.Int("exit-code")
	if findingsCode < 0 || findingsCode > 125 || findingsCode == ExitError {
		return ExitError, usageError("--exit-code %d: want 0 to 125, and not 2 (a scan that was not complete)", findingsCode)
	}
	lister := a.sweepLister(v)
	if v.Bool("emit-job") {
		return emitJob(c, a, v, lister, args)
	}
	shard, err := sweep.ShardFrom(v.String("shard"), v.Int("shards"), a.lookupEnv)
	if err != nil {
		return ExitError, usageError("%v", err)
	}
	targets, err := lister.List(c.Context(), a.stdin, args...)
	if err != nil {
		return ExitError, &exitError{code: ExitError, err: err}
	}
	mine := sweep.Split(targets, shard)
	format := v.String("format")
	s, err := a.pipeline(v, func(o *scan.Options) {
		if format == "cyclonedx" {
			o.HashComponents = true
		}
	})
	if err != nil {
		return ExitError, err
	}
	defer s.Close()
	quiet := v.Bool("quiet")
	if !quiet {
		fmt.Fprintf(a.stderr, "mlwarden: sweep shard %s: %d of %d targets (cache: %s)\n", shard, len(mine), len(targets), s.Cache().Name())
	}
	run := &sweep.Runner{Scanner: s, Lister: lister, Resume: !v.Bool("no-cache"), Salt: sweepSalt(v)}
	start := time.Now()
	res, err := run.Run(c.Context(), mine)
	if err != nil {
		return ExitError, err
	}
	if dir := v.String("report-dir"); dir != "" {
		if err := writeShardReport(dir, shard, res); err != nil {
			return ExitError, err
		}
	}
	out := output{format: format, path: v.String("output"), showSuppressed: v.Bool("show-suppressed"), quiet: quiet}
	ropts := reports.Options{ToolVersion: a.build.Version, Rules: s.Rules(), ShowSuppressed: out.showSuppressed,
		FailOn: v.Severity("fail-on"), Start: start, End: time.Now(), Category: reports.Category(mine)}
	if err := writeReport(a, out, res, ropts); err != nil {
		return ExitError, err
	}
	code := scan.ExitCode(res, v.Severity("fail-on"))
	if code == ExitFindings {
		code = findingsCode
	}
	return code, nil
}

// sweepSalt names what decides a kept target result besides the rules
// version: the baseline's content and --severity.
func sweepSalt(v *config.Values) string {
	h := sha256.New()
	if v.Has("baseline") {
		data, _ := os.ReadFile(v.String("baseline"))
		h.Write(data)
	}
	if v.Has("severity") {
		fmt.Fprint(h, "\x00", strings.Join(v.List("severity"), ","))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// writeShardReport writes the shard's JSON report as DIR/shard-N-of-M.json,
// through a temporary file (a pod killed mid-write leaves no half report).
func writeShardReport(dir string, shard sweep.Shard, res *scanners.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--report-dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".shard-*")
	if err != nil {
		return fmt.Errorf("--report-dir: %w", err)
	}
	defer os.Remove(f.Name())
	err = reports.Write(f, "json", res, reports.Options{})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, shard.Name()))
	}
	if err != nil {
		return fmt.Errorf("--report-dir: %w", err)
	}
	return nil
}

// jobOwnFlags are sweep's settings that shape the Job, not its pods' scans.
var jobOwnFlags = []string{"shard", "shards", "emit-job", "job-name", "job-namespace", "job-image", "job-parallelism",
	"job-secret", "job-pvc", "report-dir", "output", "config", "fail-on", "quiet", "no-target-config"}

func emitJob(c *cobra.Command, a *app, v *config.Values, lister *sweep.Lister, args []string) (int, error) {
	shards := v.Int("shards")
	if shards < 1 {
		return ExitError, usageError("--emit-job needs --shards M, how many pods scan the list")
	}
	targets, err := lister.List(c.Context(), a.stdin, args...)
	if err != nil {
		return ExitError, &exitError{code: ExitError, err: err}
	}
	img := v.String("job-image")
	if img == "" {
		img = "ghcr.io/mlwarden/mlwarden:v" + strings.TrimPrefix(a.build.Version, "v")
	}
	j := sweep.Job{Name: v.String("job-name"), Namespace: v.String("job-namespace"), Image: img,
		Shards: shards, Parallelism: v.Int("job-parallelism"), Targets: targets, Secret: v.String("job-secret"), PVC: v.String("job-pvc")}
	set := setFlags(c)
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if slices.Contains(jobOwnFlags, n) {
			continue
		}
		if n == "cache-backend" && strings.Contains(set[n][0], "@") {
			return ExitError, usageError("--cache-backend with a password is not written into a manifest: put it in a Secret as MLWARDEN_CACHE_BACKEND and name it with --job-secret")
		}
		s, _ := config.Lookup(config.CmdSweep, n)
		switch s.Type {
		case config.Strings:
			for _, x := range set[n] {
				j.Args = append(j.Args, "--"+n+"="+x)
			}
		case config.List:
			j.Args = append(j.Args, "--"+n+"="+strings.Join(set[n], ","))
		default:
			j.Args = append(j.Args, "--"+n+"="+set[n][0])
		}
	}
	if f := v.File(); f != nil {
		if j.Config, err = os.ReadFile(f.Path); err != nil {
			return ExitError, err
		}
	}
	if !v.Has("cache-backend") || v.String("cache-backend") == "fs" {
		if _, inSecret := a.lookupEnv("MLWARDEN_CACHE_BACKEND"); !inSecret && j.Secret == "" {
			fmt.Fprintln(a.stderr, "mlwarden: warning: the pods keep results in their own fs cache: they share no layers and a rerun scans everything; give --cache-backend redis://… (or MLWARDEN_CACHE_BACKEND in --job-secret)")
		}
	}
	data, err := j.Manifest()
	if err != nil {
		return ExitError, usageError("%v", err)
	}
	w := a.stdout
	if p := v.String("output"); p != "" && p != "-" {
		return ExitOK, os.WriteFile(p, data, 0o644)
	}
	_, err = w.Write(data)
	return ExitOK, err
}

func runSweepMerge(c *cobra.Command, a *app, args []string) (int, error) {
	v, err := a.resolve(c)
	if err != nil {
		return ExitError, err
	}
	var parts []*scanners.Result
	for _, p := range args {
		f, err := os.Open(p)
		if err != nil {
			return ExitError, &exitError{code: ExitError, err: err}
		}
		r, err := sweep.ReadReport(f)
		f.Close()
		if err != nil {
			return ExitError, &exitError{code: ExitError, err: fmt.Errorf("%s: %w", p, err)}
		}
		parts = append(parts, r)
	}
	res, err := sweep.Merge(parts...)
	if err != nil {
		return ExitError, &exitError{code: ExitError, err: err}
	}
	// The rules, for formats that describe them (SARIF).
	s, err := scan.New(scan.Options{Image: image.Options{NoCache: true}})
	if err != nil {
		return ExitError, err
	}
	defer s.Close()
	var names []string
	for _, t := range res.Targets {
		names = append(names, t.Name)
	}
	out := output{format: v.String("format"), path: v.String("output")}
	ropts := reports.Options{ToolVersion: a.build.Version, Rules: s.Rules(), FailOn: v.Severity("fail-on"), Category: reports.Category(names)}
	if err := writeReport(a, out, res, ropts); err != nil {
		return ExitError, err
	}
	return scan.ExitCode(res, v.Severity("fail-on")), nil
}
