//go:build !mlwarden_sbatch

package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/node"
	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

func newNodeCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "node",
		Short: "Audit this GPU node (or a node tree) for intrusions and isolation gaps",
		Long: `Audit the node mlwarden runs on — as root, in the host PID namespace — for the
signs of an intrusion and the isolation gaps that let one in:

  node/gpu-process-outside-allocation  a process on a GPU in no Slurm job and no pod
  node/miner-process                   a known miner binary or a stratum URL
  node/miner-connection                an established connection to a mining-pool port
  node/kernel-thread-masquerade        a user process named like a kernel thread
  node/notebook-exposed                Jupyter listening on all interfaces
  node/service-exposed                 Ray, TensorBoard, MLflow, vLLM, Triton… on all interfaces
  node/persistence-cron                suspicious cron entries, user crontabs on compute nodes
  node/persistence-user-service        lingering users' systemd units
  node/gpu-device-unfenced             world-writable /dev/nvidia* with nothing fencing devices

The node's own configuration files (Slurm, sshd's PAM stack, NVIDIA module
parameters, the container toolkit's config.toml, CDI specs) go through the
misconfig check in the same run. The report lists the driver, the GPUs, their MIG
mode and the processes on each GPU with their job or pod.

--root DIR audits a copied or mounted node tree instead (links are read as links,
never followed out of DIR); give --gpu-processes FILE (nvidia-smi's CSV) there, as
NVML describes only this node. Without a GPU or NVML the audit says so in a note.

--capture FILE.tar.gz first writes an evidence bundle: each flagged process's
cmdline, status, stat, cgroup, exe link, sockets and environment variable names
(never values), the cron and unit files involved, and the report. mlwarden never
kills or changes anything.

Output formats, --fail-on, ignore entries, --baseline and exit codes are scan's:
0 nothing at or above --fail-on, 1 (or --exit-code) findings at or above it, 2 the
node could not be audited in full.`,
		Example: `  # On a GPU node, as root; fail on high or critical
  sudo mlwarden node

  # A copied node tree, with the GPU processes nvidia-smi listed there
  mlwarden node --root /mnt/node17 --gpu-processes node17-gpu.csv --format json

  # Preserve evidence before anyone touches the node
  sudo mlwarden node --capture /var/tmp/node17-evidence.tar.gz

  # Prometheus metrics for a DaemonSet, audited every 5 minutes
  mlwarden node --metrics-listen :9464 --interval 5m`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			code, err := runNode(c, a)
			a.code = code
			return err
		},
	}
	bindSettings(c, config.CmdNode)
	return c
}

// maxGPUProcessesFile bounds a --gpu-processes file.
const maxGPUProcessesFile = 16 << 20

// nodeAudit is one audit of the node, judged through the scan pipeline.
type nodeAudit struct {
	res   *scan.Result
	rules []scanners.Rule
	start time.Time
	audit *node.Audit
	check *node.Check
}

func nodeOptions(v *config.Values) (node.Options, error) {
	var o node.Options
	if gp := v.String("gpu-processes"); gp != "" {
		f, err := os.Open(gp)
		if err != nil {
			return o, usageError("--gpu-processes: %v", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxGPUProcessesFile+1))
		if err != nil {
			return o, usageError("--gpu-processes: %v", err)
		}
		if len(b) > maxGPUProcessesFile {
			return o, usageError("--gpu-processes: larger than %d bytes", maxGPUProcessesFile)
		}
		o.GPUProcesses, o.GPUSource = b, gp
	} else if v.String("root") != "/" {
		o.NoNVML = true // NVML describes this node, not the tree
	}
	return o, nil
}

// auditNode reads the node and runs the pipeline on it; capture, when
// set, is started with the audit's findings before the pipeline runs.
func auditNode(c *cobra.Command, a *app, v *config.Values, o node.Options, capture func(*node.Audit, []scanners.Finding) error) (*nodeAudit, error) {
	start := time.Now()
	audit, err := node.Collect(c.Context(), v.String("root"), o)
	if err != nil {
		return nil, &exitError{code: ExitError, err: err}
	}
	check := node.NewCheck(audit)
	if capture != nil {
		if err := capture(audit, check.Findings()); err != nil {
			return nil, &exitError{code: ExitError, err: err}
		}
	}
	s, err := a.pipeline(v, func(po *scan.Options) {
		// The node's files go through the misconfig check; its processes,
		// sockets, cron tables and devices through the node check.
		po.Checks, po.Extra = []string{scanners.CheckMisconfig}, []scanners.Scanner{check}
		po.Version += "\x00node"
		po.Image.NoCache = true
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	res, err := s.Run(c.Context(), scan.Target{Source: node.NewSource(audit)})
	if err != nil {
		return nil, &exitError{code: ExitError, err: err}
	}
	return &nodeAudit{res: res, rules: s.Rules(), start: start, audit: audit, check: check}, nil
}

func runNode(c *cobra.Command, a *app) (int, error) {
	v, err := a.configure(c, nil)
	if err != nil {
		return ExitError, err
	}
	findingsCode := v.Int("exit-code")
	if findingsCode < 0 || findingsCode > 125 || findingsCode == ExitError {
		return ExitError, usageError("--exit-code %d: want 0 to 125, and not 2 (an audit that was not complete)", findingsCode)
	}
	o, err := nodeOptions(v)
	if err != nil {
		return ExitError, err
	}
	if addr := v.String("metrics-listen"); addr != "" {
		return ExitError, serveNodeMetrics(c, a, v, o, addr)
	}
	var capt *node.Capture
	var capture func(*node.Audit, []scanners.Finding) error
	if name := v.String("capture"); name != "" {
		capture = func(au *node.Audit, fs []scanners.Finding) error {
			var err error
			capt, err = node.StartCapture(name, au, fs)
			return err
		}
	}
	na, err := auditNode(c, a, v, o, capture)
	if err != nil {
		return ExitError, err
	}
	format := v.String("format")
	out := output{format: format, path: v.String("output"), showSuppressed: v.Bool("show-suppressed"), quiet: v.Bool("quiet")}
	ropts := reports.Options{ToolVersion: a.build.Version, Rules: na.rules, ShowSuppressed: out.showSuppressed,
		FailOn: v.Severity("fail-on"), Start: na.start, End: time.Now()}
	if capt != nil {
		jopts := ropts
		if err := capt.Finish(func(w io.Writer) error { return reports.Write(w, "json", na.res.Result, jopts) }); err != nil {
			return ExitError, err
		}
		if !out.quiet {
			fmt.Fprintf(a.stderr, "mlwarden: evidence written to %s\n", v.String("capture"))
		}
	}
	if err := writeReport(a, out, na.res.Result, ropts); err != nil {
		return ExitError, err
	}
	code := scan.ExitCode(na.res.Result, v.Severity("fail-on"))
	if code == ExitFindings {
		code = findingsCode
	}
	return code, nil
}
