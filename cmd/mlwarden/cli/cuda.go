//go:build !mlwarden_sbatch

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/cuda"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// newCUDACmd is `mlwarden cuda`: host facts and "will this run there?".
func newCUDACmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cuda",
		Short: "Check declared CUDA versions against NVIDIA drivers and GPUs",
		Long: `The cuda commands answer "will this run there?" before anyone books GPU hours.

'mlwarden cuda host' prints this node's driver and GPUs (read through NVML, or
/proc/driver/nvidia/version and nvidia-smi) as a host file. Collect one per node
pool and check against them in CI, where there is no GPU.

'mlwarden cuda check' reads the CUDA version that images, requirements files,
conda environments and batch scripts declare, and evaluates it with NVIDIA's
rules: the container toolkit's NVIDIA_REQUIRE_* check, GPU architectures,
forward compatibility and minor-version compatibility.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(newCUDAHostCmd(a), newCUDACheckCmd(a))
	return cmd
}

func newCUDAHostCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Print this node's NVIDIA driver and GPUs as a host file",
		Long: `Print this node's NVIDIA driver, the CUDA version it supports and every GPU
(name, brand, compute capability, MIG mode), read through NVML when mlwarden was
built with cgo, else from /proc/driver/nvidia/version and nvidia-smi.

The YAML output is a host file: 'mlwarden cuda check --host FILE' and inventories
read it as is. Add forward_compat (a cuda-compat package installed on the node)
and container_toolkit_mode (legacy or cdi) by hand when they apply.

Exit status: 0 printed, 2 no NVIDIA driver found or bad usage.`,
		Example: `  # On a GPU node of the a100 pool:
  mlwarden cuda host > pools/a100.yaml

  mlwarden cuda host --format json
  mlwarden cuda host --format text`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			v, err := a.resolve(c)
			if err != nil {
				return err
			}
			format := v.String("format")
			h, err := cuda.LocalHost(c.Context())
			if err != nil {
				return &exitError{code: ExitError, err: fmt.Errorf("cuda host: %w", err)}
			}
			return writeHost(a.stdout, h, format)
		},
	}
	bindSettings(cmd, "cuda host")
	return cmd
}

func writeHost(w io.Writer, h cuda.HostFacts, format string) error {
	var b []byte
	var err error
	switch format {
	case "json":
		b, err = h.JSON()
	case "yaml":
		b, err = h.YAML()
	default:
		var sb strings.Builder
		fmt.Fprintf(&sb, "OS:      %s\nDriver:  %s\nCUDA:    %s\n", h.OS, h.DriverVersion, orDash(h.CUDADriverVersion))
		if h.ContainerToolkitVersion != "" {
			fmt.Fprintf(&sb, "Toolkit: %s (%s mode)\n", h.ContainerToolkitVersion, h.ContainerToolkitMode)
		}
		for i, g := range h.GPUs {
			mig := ""
			if g.MIG {
				mig = ", MIG enabled"
			}
			fmt.Fprintf(&sb, "GPU %d:   %s (%s, compute capability %s%s)\n", i, orDash(g.Name), g.Brand, g.ComputeCapability, mig)
		}
		b = []byte(sb.String())
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cudaCheckOptions are `cuda check`'s flags.
type cudaCheckOptions struct {
	env       []string
	require   string
	hostFile  string
	inventory string
	driver    string
	gpus      []string
	format    string
	rulesDir  string
}

// cudaResult is one line of `cuda check --format json`.
type cudaResult struct {
	Target       string          `json:"target"`
	Host         string          `json:"host"`
	DeclaredCUDA string          `json:"declared_cuda"`
	Verdict      cuda.Verdict    `json:"verdict"`
	Reasons      []string        `json:"reasons"`
	Declarations []cuda.Evidence `json:"declarations,omitempty"`
	// Suppressed lists the verdict's problems that a suppression covers
	// (an ignore entry, the baseline, an inline comment). A verdict whose
	// every failing problem is suppressed does not fail the run.
	Suppressed []cudaSuppressed `json:"suppressed,omitempty"`
}

// cudaSuppressed is one suppressed problem of a verdict.
type cudaSuppressed struct {
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// Why is the suppression's reason, as a scan report gives it.
	Why string `json:"why"`
}

// fails reports whether the result fails the run: incompatible, with a
// problem that no suppression covers.
func (r cudaResult) fails(ev cuda.Evaluation) bool {
	if r.Verdict != cuda.Incompatible {
		return false
	}
	for _, p := range ev.Problems {
		if p.Rule != cuda.RuleForwardCompatRequired && !slices.ContainsFunc(r.Suppressed, func(s cudaSuppressed) bool { return s.Rule == p.Rule && s.Reason == p.Reason }) {
			return true
		}
	}
	return false
}

type cudaReport struct {
	Results []cudaResult     `json:"results"`
	Errors  []scanners.Error `json:"errors,omitempty"`
}

func newCUDACheckCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check [TARGET...]",
		Short: "Check whether targets' CUDA runs on a host, a host file or every pool of an inventory",
		Long: `Read the CUDA version each TARGET declares and decide, per host, whether it runs:

  compatible                     the driver supports it (natively or through
                                 minor-version compatibility)
  compatible-via-forward-compat  only with the cuda-compat libraries, on data-center
                                 GPUs and a supported driver branch
  incompatible                   the container would not start, or CUDA fails at
                                 the first call (driver too old, no kernels for the
                                 GPU, error 804)
  unknown                        nothing declares a CUDA version

A TARGET is any scan target: an image (registry:REF, oci:DIR, docker-archive:FILE),
a requirements file, an environment.yml, a batch script, a Dockerfile or a directory.
CUDA is read from an image's CUDA_VERSION, NVIDIA_REQUIRE_* and NVIDIA_DISABLE_REQUIRE,
compat libraries (/usr/local/cuda*/compat/libcuda.so.*), torch/version.py and
torch-*+cuXYZ.dist-info, pip pins (torch==X+cu121, nvidia-cuda-runtime-cu12, cuda-toolkit,
PyTorch index URLs; also in uv, poetry, Pipfile and pylock lock files and pyproject.toml),
conda pins (pytorch-cuda, cudatoolkit, cuda-version), module loads (cuda/X.Y, EasyBuild
CUDA/X.Y.Z) and TORCH_CUDA_ARCH_LIST. All of one target's declarations are combined:
an image's config and its files are checked together.

--env KEY=VALUE describes an image environment directly (a Dockerfile's ENV, an
admission policy); --require EXPR is short for --env NVIDIA_REQUIRE_CUDA=EXPR. With no
TARGET they are checked on their own.

Host facts come from --host FILE (as 'mlwarden cuda host' prints it), --inventory FILE
(named node pools: a verdict per pool), --driver VERSION with --gpu CC[:BRAND], or,
when none is given, this node (NVML).

Targets are read as 'mlwarden scan' reads them: the config file (--config, else
.mlwarden.yaml in the first directory target or the current directory, unless
--no-target-config), --skip-dirs/--skip-files, --max-file-size, --timeout and the image,
cache and Hub settings apply. Each problem of a verdict is a finding of its cuda rule at
the declaration, so the config's ignore entries, --baseline and an inline
'# mlwarden:ignore cuda/incompatible' comment on the declaring line suppress it; a verdict
whose problems are all suppressed is shown as such and does not fail the run.

Exit status: 0 every result compatible (forward compatibility included) or suppressed,
1 some result incompatible, 2 could not check: bad usage, no host facts, a target that
could not be read in full, or a verdict of unknown.`,
		Example: `  # Will this image start on the production pools?
  mlwarden cuda check registry:registry.example.com/nvidia/pytorch:25.08-py3 --inventory pools.yaml

  # A requirements file against a driver and two GPU kinds, as JSON
  mlwarden cuda check requirements.txt --driver 535.104.05 --gpu 8.0:tesla --gpu 9.0:nvidia --format json

  # An image environment described directly
  mlwarden cuda check --env CUDA_VERSION=12.4.1 --require 'cuda>=12.4 brand=tesla,driver>=535,driver<536' --host a100.yaml

  # An inventory: named pools, each a host file or inline facts
  cat pools.yaml
  pools:
    - {name: a100-r535, host_file: pools/a100.yaml}
    - {name: h100, host: {driver_version: 580.65.06, gpus: [{compute_capability: "9.0", brand: nvidia}]}}`,
		RunE: func(c *cobra.Command, args []string) error {
			v, err := a.configure(c, args)
			if err != nil {
				return err
			}
			o := cudaCheckOptions{
				env: v.List("env"), require: v.String("require"), hostFile: v.String("host"),
				inventory: v.String("inventory"), driver: v.String("driver"), gpus: v.List("gpu"),
				format: v.String("format"), rulesDir: v.String("rules-dir"),
			}
			return runCUDACheck(c, a, v, o, args)
		},
	}
	bindSettings(cmd, "cuda check")
	return cmd
}

func (o cudaCheckOptions) scannerOptions() ([]cuda.Option, error) {
	var opts []cuda.Option
	given := 0
	if o.hostFile != "" {
		given++
		opts = append(opts, cuda.WithHostFile(o.hostFile))
	}
	if o.inventory != "" {
		given++
		opts = append(opts, cuda.WithInventory(o.inventory))
	}
	if o.driver != "" || len(o.gpus) > 0 {
		given++
		if o.driver == "" {
			return nil, usageError("--gpu needs --driver")
		}
		opts = append(opts, cuda.WithDriver(o.driver))
		for _, g := range o.gpus {
			gpu, err := cuda.ParseGPUFlag(g)
			if err != nil {
				return nil, usageError("--gpu %q: %v", g, err)
			}
			opts = append(opts, cuda.WithGPUs(gpu))
		}
	}
	if given > 1 {
		return nil, usageError("give one of --host, --inventory, or --driver with --gpu")
	}
	if given == 0 {
		opts = append(opts, cuda.WithLocalHost())
	}
	if o.rulesDir != "" {
		opts = append(opts, cuda.WithRulesFS(os.DirFS(o.rulesDir)))
	}
	return opts, nil
}

// runCUDACheck checks the targets through the scan pipeline (scan.Run),
// so that the config file, skips, limits, registry and Hub settings and
// suppressions apply as in every other front end: the pipeline runs one
// check, cuda.TargetCheck, which combines each target's declarations and
// reports each problem of a verdict as a finding; a verdict whose problems
// are all suppressed does not fail the run.
func runCUDACheck(c *cobra.Command, a *app, v *config.Values, o cudaCheckOptions, targets []string) error {
	env := append([]string(nil), o.env...)
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usageError("--env %q: want KEY=VALUE", kv)
		}
	}
	if o.require != "" {
		env = append(env, "NVIDIA_REQUIRE_CUDA="+o.require)
	}
	if len(targets) == 0 && len(env) == 0 {
		return usageError("nothing to check: give a TARGET, --env or --require (see 'mlwarden cuda check --help')")
	}
	opts, err := o.scannerOptions()
	if err != nil {
		return err
	}
	sc, err := cuda.New(opts...)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	if len(sc.Pools()) == 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("cuda check: %s: run on a GPU node or give --host, --inventory or --driver", sc.HostNote())}
	}
	var envDecl *cuda.Declared
	if len(env) > 0 {
		d := cuda.ExtractEnv(env, "--env")
		if d.Env == nil {
			// Describing an environment means describing an image: keep the
			// (empty) requirement set so that it is evaluated.
			e := cuda.ParseImageEnv(env)
			d.Env = &e
		}
		envDecl = &d
	}
	rep := cudaReport{Results: []cudaResult{}}
	var verdicts []cuda.TargetVerdict
	suppressed := map[string]string{} // finding key → why
	if len(targets) == 0 {
		// Nothing to open: the environment alone is judged.
		verdicts = []cuda.TargetVerdict{{Target: "--env", Declared: *envDecl, Evaluations: sc.EvaluateAll(*envDecl)}}
	} else {
		check := sc.PerTarget(envDecl)
		s, err := a.pipeline(v, func(po *scan.Options) {
			po.Scanners, po.Checks = []scanners.Scanner{check}, []string{scanners.CheckCUDA}
			// Its cached results hold declarations, not scan's findings.
			po.Version += "\x00cuda check"
		})
		if err != nil {
			return err
		}
		defer s.Close()
		ts := make([]scan.Target, len(targets))
		for i, t := range targets {
			ts[i] = scan.Target{Ref: t}
		}
		res, err := s.Run(c.Context(), ts...)
		if err != nil {
			return &exitError{code: ExitError, err: err}
		}
		rep.Errors = append(rep.Errors, res.Errors...)
		for _, f := range res.Findings {
			if f.Suppressed != "" {
				suppressed[findingKey(f)] = f.Suppressed
			}
		}
		verdicts = check.Verdicts()
	}
	code := ExitOK
	unknown := false
	for _, tv := range verdicts {
		for i, ev := range tv.Evaluations {
			r := cudaResult{
				Target: tv.Target, Host: ev.Host, DeclaredCUDA: ev.DeclaredCUDA, Verdict: ev.Verdict,
				Reasons: nonNil(ev.Reasons), Declarations: tv.Declared.Evidence,
			}
			if i < len(tv.Findings) {
				for j, f := range tv.Findings[i] {
					if why, ok := suppressed[findingKey(f)]; ok {
						p := ev.Problems[j]
						r.Suppressed = append(r.Suppressed, cudaSuppressed{Rule: p.Rule, Reason: p.Reason, Why: why})
					}
				}
			}
			rep.Results = append(rep.Results, r)
			switch {
			case r.fails(ev):
				code = ExitFindings
			case ev.Verdict == cuda.Unknown:
				unknown = true
			}
		}
	}
	if len(rep.Errors) > 0 || (unknown && code == ExitOK) {
		code = ExitError
	}
	if err := writeCUDAReport(a.stdout, rep, o.format); err != nil {
		return err
	}
	a.code = code
	return nil
}

// findingKey names a finding of the cuda check across the pipeline's
// suppressions, which copy findings and set Suppressed.
func findingKey(f scanners.Finding) string {
	return strings.Join([]string{f.Target, f.RuleID, f.Path, f.Layer, strconv.Itoa(f.Line), f.Message}, "\x00")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeCUDAReport(w io.Writer, rep cudaReport, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tHOST\tCUDA\tVERDICT")
	for _, r := range rep.Results {
		verdict := string(r.Verdict)
		if len(r.Suppressed) > 0 {
			verdict += " (suppressed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Target, r.Host, orDash(r.DeclaredCUDA), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Results {
		if len(r.Reasons) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s on %s: %s\n", r.Target, r.Host, r.Verdict)
		for _, why := range r.Reasons {
			for _, sup := range r.Suppressed {
				if sup.Reason == why {
					why += " [suppressed: " + sup.Why + "]"
					break
				}
			}
			fmt.Fprintf(w, "  - %s\n", reports.Escape(why))
		}
	}
	errs := append([]scanners.Error(nil), rep.Errors...)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Target < errs[j].Target })
	for _, e := range errs {
		fmt.Fprintf(w, "error: %s\n", e.Error())
	}
	return nil
}
