//go:build !mlwarden_sbatch

package misconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/mlwarden/mlwarden/scanners"
)

// Rules of a GPU node's own configuration: Slurm's isolation settings,
// sshd's PAM stack, the NVIDIA driver's module parameters, the container
// toolkit's config.toml and CDI specs (docs/design/misconfig.md).
var (
	RuleSlurmDevicesUnconstrained = scanners.Rule{
		ID: "misconfig/slurm-devices-unconstrained", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "Slurm schedules GPUs but does not fence devices (ConstrainDevices)",
		Why:   "cgroup.conf's ConstrainDevices defaults to no: a job can open every /dev/nvidia* of the node (the driver makes them mode 0666), and only CUDA_VISIBLE_DEVICES, which the user sets, keeps it off GPUs given to other jobs.",
		Fix:   "Set ConstrainDevices=yes in cgroup.conf (beside slurm.conf), with TaskPlugin=task/cgroup and File= (or AutoDetect) for every GPU in gres.conf.",
	}
	RuleSlurmTaskCgroupMissing = scanners.Rule{
		ID: "misconfig/slurm-task-cgroup-missing", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "Slurm's TaskPlugin has no task/cgroup",
		Why:   "Without task/cgroup (TaskPlugin is unset by default) nothing of cgroup.conf applies to jobs: no device, core or memory fencing at all.",
		Fix:   "Set TaskPlugin=task/cgroup,task/affinity in slurm.conf.",
	}
	RuleSlurmProctrackWeak = scanners.Rule{
		ID: "misconfig/slurm-proctrack-weak", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "Slurm tracks processes by parent or process group",
		Why:   "proctrack/linuxproc and proctrack/pgid can fail to identify all of a job's processes: a process that leaves its process group or reparents keeps running (and holding GPUs) after the job ends, and pam_slurm_adopt needs proctrack/cgroup.",
		Fix:   "Set ProctrackType=proctrack/cgroup in slurm.conf.",
	}
	RuleSlurmSSHOutsideAllocation = scanners.Rule{
		ID: "misconfig/slurm-ssh-outside-allocation", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "An ssh login to a compute node lands outside the job's cgroup",
		Why:   "Without PrologFlags=Contain and pam_slurm_adopt in sshd's account stack, a user who can ssh to a node runs outside every job's cgroup, on GPUs and memory the scheduler gave to others; pam_systemd moves adopted processes out again, and pam_slurm_adopt's action_adopt_failure defaults to allow.",
		Fix:   "Set PrologFlags=Contain in slurm.conf; end sshd's account stack with 'account required pam_slurm_adopt.so action_adopt_failure=deny action_generic_failure=deny'; remove pam_systemd from its session stack.",
	}
	RuleSlurmGRESUnfenced = scanners.Rule{
		ID: "misconfig/slurm-gres-unfenced", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "GPU GRES with no device files (File=) and no AutoDetect",
		Why:   "A gpu GRES without File= or AutoDetect is only a count: Slurm knows no device to put in the job's cgroup, so ConstrainDevices cannot fence it.",
		Fix:   "Give every Name=gpu line of gres.conf File=/dev/nvidia[0-N] (MultipleFiles= for MIG), or set AutoDetect=nvml.",
	}
	RuleSlurmAccountingUnenforced = scanners.Rule{
		ID: "misconfig/slurm-accounting-unenforced", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "Slurm does not enforce accounting limits on GPUs",
		Why:   "AccountingStorageEnforce is empty by default: per-account and QOS GPU limits (GrpTRES=gres/gpu=…) are recorded but do nothing, so one account can take every GPU.",
		Fix:   "Set AccountingStorageEnforce=associations,limits,qos,safe and AccountingStorageTRES=gres/gpu in slurm.conf.",
	}
	RuleSlurmGPUSharing = scanners.Rule{
		ID: "misconfig/slurm-gpu-sharing", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "GPUs shared through shard or MPS GRES on nodes several users share",
		Why:   "Slurm's sharing (shard, mps) does not fence the processes running on a GPU: jobs of different users on one GPU share its memory and fault domain.",
		Fix:   "Keep shard/mps GRES to partitions with ExclusiveUser=YES (or OverSubscribe=EXCLUSIVE), or use MIG for GPUs shared between users.",
	}
	RuleNVIDIAProfilingUnrestricted = scanners.Rule{
		ID: "misconfig/nvidia-profiling-unrestricted", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "GPU performance counters open to every user (RmProfilingAdminOnly 0)",
		Why:   "With NVreg_RestrictProfilingToAdminUsers=0 any user can read a GPU's performance counters, a side channel into the kernels other tenants run on it.",
		Fix:   "Remove NVreg_RestrictProfilingToAdminUsers=0 from /etc/modprobe.d (the driver's default is 1) and reload the nvidia module.",
	}
	RuleContainerToolkitEnvvarDevices = scanners.Rule{
		ID: "misconfig/container-toolkit-envvar-devices", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "NVIDIA container toolkit gives unprivileged containers the GPUs NVIDIA_VISIBLE_DEVICES names",
		Why:   "With accept-nvidia-visible-devices-envvar-when-unprivileged = true (the toolkit's default) any unprivileged container that sets NVIDIA_VISIBLE_DEVICES=all, as many CUDA images do, gets every GPU of the node, whatever the scheduler allocated.",
		Fix:   "Set accept-nvidia-visible-devices-envvar-when-unprivileged = false in config.toml and have the device plugin pass devices as volume mounts or CDI annotations (deviceListStrategy volume-mounts or cdi-annotations).",
	}
	RuleCDIHostMount = scanners.Rule{
		ID: "misconfig/cdi-host-mount", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "CDI spec mounts host paths or devices beyond the GPU's own",
		Why:   "Every container that asks for a CDI device gets its spec's containerEdits: a host mount of /, /etc, a runtime socket or a device node other than /dev/nvidia* and /dev/dri hands every such container that part of the host.",
		Fix:   "Regenerate the spec (nvidia-ctk cdi generate) and keep its edits to the GPU's device nodes and driver files; keep /etc/cdi and /var/run/cdi writable by root only.",
	}
)

func nodeRules() []scanners.Rule {
	return []scanners.Rule{RuleSlurmDevicesUnconstrained, RuleSlurmTaskCgroupMissing, RuleSlurmProctrackWeak, RuleSlurmSSHOutsideAllocation,
		RuleSlurmGRESUnfenced, RuleSlurmAccountingUnenforced, RuleSlurmGPUSharing, RuleNVIDIAProfilingUnrestricted,
		RuleContainerToolkitEnvvarDevices, RuleCDIHostMount, RuleNotScanned}
}

// NodeConfig is the misconfig check's reading of a GPU node's own
// configuration files, recognised by name and content wherever a target
// holds them (a node's tree under --root, an image, a repository of
// configs): slurm.conf, cgroup.conf, gres.conf, /etc/pam.d/sshd, NVIDIA
// module parameters (modprobe.d options, /proc/driver/nvidia/params), the
// container toolkit's config.toml and CDI specs. What needs several files
// (slurm.conf with the cgroup.conf and gres.conf beside it; sshd's PAM
// stack on a node that runs Slurm) is judged at the end of the target. It
// is safe for concurrent use.
type NodeConfig struct {
	mu      sync.Mutex
	targets map[string]*nodeFacts
}

// NewNodeConfig returns the node configuration reading of the misconfig check.
func NewNodeConfig() *NodeConfig { return &NodeConfig{targets: map[string]*nodeFacts{}} }

// Check implements scanners.Scanner.
func (n *NodeConfig) Check() string { return scanners.CheckMisconfig }

// Rules implements scanners.Scanner.
func (n *NodeConfig) Rules() []scanners.Rule { return nodeRules() }

// nodeFile is what kind of node configuration a file is.
type nodeFile int

const (
	nodeNone nodeFile = iota
	nodeSlurm
	nodeCgroup
	nodeGres
	nodePAM
	nodeModprobe
	nodeParams
	nodeToolkit
	nodeCDI
)

// nodeFileOf recognises a file from its path and head.
func nodeFileOf(p string, head []byte) nodeFile {
	base := scanners.Base(p)
	switch base {
	case "slurm.conf":
		return nodeSlurm
	case "cgroup.conf":
		return nodeCgroup
	case "gres.conf":
		return nodeGres
	case "sshd":
		if path.Base(path.Dir(p)) == "pam.d" {
			return nodePAM
		}
		return nodeNone
	case "params":
		if strings.HasSuffix(p, "driver/nvidia/params") || bytes.Contains(head, []byte("RmProfilingAdminOnly:")) {
			return nodeParams
		}
		return nodeNone
	}
	switch path.Ext(base) {
	case ".conf":
		switch {
		case underDir(p, "modprobe.d") || bytes.Contains(head, []byte("options nvidia")):
			return nodeModprobe
		case bytes.Contains(head, []byte("ClusterName")) && (bytes.Contains(head, []byte("SlurmctldHost")) || bytes.Contains(head, []byte("ControlMachine"))):
			return nodeSlurm
		}
	case ".toml":
		if base == "config.toml" && (strings.HasSuffix(p, "nvidia-container-runtime/config.toml") || strings.HasSuffix(p, "nvidia-container-toolkit/config.toml")) ||
			bytes.Contains(head, []byte("accept-nvidia-visible-devices")) || bytes.Contains(head, []byte("[nvidia-container-cli]")) {
			return nodeToolkit
		}
	case ".json", ".yaml", ".yml":
		if underDir(p, "etc/cdi") || underDir(p, "var/run/cdi") || underDir(p, "run/cdi") || bytes.Contains(head, []byte("cdiVersion")) {
			return nodeCDI
		}
	}
	return nodeNone
}

// underDir reports whether p is inside a directory whose path ends in dir
// (etc/cdi: etc/cdi/x.yaml, /etc/cdi/x.yaml, node/etc/cdi/x.yaml).
func underDir(p, dir string) bool {
	return strings.HasPrefix(p, dir+"/") || strings.Contains(p, "/"+dir+"/")
}

// Wants implements scanners.Scanner: the files nodeFileOf recognises.
func (n *NodeConfig) Wants(a *scanners.Artifact, head []byte) bool {
	if a.Kind != scanners.ArtifactFile || scanners.IsBinary(head) {
		return false
	}
	return nodeFileOf(a.Path, head) != nodeNone
}

// maxNodeFile bounds one configuration file.
const maxNodeFile = 4 << 20

// Scan judges one file; what needs the target's other files is kept for
// FinishTarget.
func (n *NodeConfig) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	data, truncated, err := scanners.ReadAll(c, maxNodeFile)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	r := &nodeRun{a: a, facts: &nodeFacts{}}
	head := data[:min(len(data), scanners.HeadSize)]
	switch nodeFileOf(a.Path, head) {
	case nodeSlurm:
		r.slurm(data)
	case nodeCgroup:
		r.cgroup(data)
	case nodeGres:
		r.gres(data)
	case nodePAM:
		r.pam(data)
	case nodeModprobe:
		r.modprobe(data)
	case nodeParams:
		r.params(data)
	case nodeToolkit:
		r.toolkit(data)
	case nodeCDI:
		r.cdi(data)
	}
	if truncated {
		r.out = append(r.out, scanners.At(a, RuleNotScanned, 0,
			fmt.Sprintf("only the first %d bytes of this %d-byte configuration file were checked", maxNodeFile, c.Size())))
	}
	if !r.facts.empty() {
		n.merge(a.Target, r.facts)
		if scanners.KeepsState(ctx) {
			if b, err := json.Marshal(r.facts); err == nil {
				scanners.KeepState(ctx, b)
			}
		}
	}
	return r.out, nil
}

// nodeRun reads one file.
type nodeRun struct {
	a     *scanners.Artifact
	facts *nodeFacts
	out   []scanners.Finding
}

// add reports rule at line of file p (the artifact's own path, or a file
// it includes), with the rule's why and fix after msg.
func (r *nodeRun) add(rule scanners.Rule, sev scanners.Severity, p string, line int, evidence, msg string) {
	a := *r.a
	if p != "" && p != a.Path {
		a.Path, a.Lines = p, nil
	}
	f := scanners.At(&a, rule, line, ruleMessage(rule, msg))
	f.Severity = sev
	f.Evidence = clip(evidence, 120)
	r.out = append(r.out, f)
}

func ruleMessage(rule scanners.Rule, msg string) string {
	return msg + ": " + rule.Why + " Fix: " + rule.Fix
}

// note reports what could not be read (an Include not followed).
func (r *nodeRun) note(p string, line int, msg string) {
	a := *r.a
	if p != "" && p != a.Path {
		a.Path, a.Lines = p, nil
	}
	r.out = append(r.out, scanners.At(&a, RuleNotScanned, line, msg))
}

// site is where a fact was read: the finding FinishTarget makes about it
// carries this origin.
type site struct {
	Path       string `json:"path"`
	Layer      string `json:"layer,omitempty"`
	LayerIndex int    `json:"layer_index,omitempty"`
	Commit     string `json:"commit,omitempty"`
	Note       string `json:"note,omitempty"`
}

func (r *nodeRun) site() site {
	return site{Path: r.a.Path, Layer: r.a.Layer, LayerIndex: r.a.LayerIndex, Commit: r.a.Commit, Note: r.a.Note}
}

// slurmFact is a slurm.conf that schedules GPUs.
type slurmFact struct {
	site
	GPUPath string `json:"gpu_path"` // where GPU GRES is declared (GresTypes, a NodeName line)
	GPULine int    `json:"gpu_line"`
	GPUWhat string `json:"gpu_what"`
}

// cgroupFact is a cgroup.conf: what it says about device fencing.
type cgroupFact struct {
	site
	Devices     string `json:"devices,omitempty"` // ConstrainDevices as written ("" unset)
	DevicesPath string `json:"devices_path,omitempty"`
	DevicesLine int    `json:"devices_line,omitempty"`
	Disabled    bool   `json:"disabled,omitempty"` // CgroupPlugin=disabled
	PluginPath  string `json:"plugin_path,omitempty"`
	PluginLine  int    `json:"plugin_line,omitempty"`
}

// gresFact is a gres.conf: whether it names gpu GRES at all, or detects them.
type gresFact struct {
	site
	GPU        bool `json:"gpu,omitempty"`
	AutoDetect bool `json:"autodetect,omitempty"`
}

// pamFact is a PAM sshd stack without pam_slurm_adopt: a finding when the
// target is a Slurm node.
type pamFact struct {
	site
}

// nodeFacts is what a target's files say that needs other files to judge,
// by path (the last layer's file wins in an image).
type nodeFacts struct {
	Slurm  []slurmFact  `json:"slurm,omitempty"`
	Cgroup []cgroupFact `json:"cgroup,omitempty"`
	Gres   []gresFact   `json:"gres,omitempty"`
	PAM    []pamFact    `json:"pam,omitempty"`
	// Slurmish: the target holds a Slurm configuration at all (a
	// slurm.conf, cgroup.conf or gres.conf), so it is a Slurm node.
	Slurmish bool `json:"slurmish,omitempty"`
}

func (f *nodeFacts) empty() bool {
	return !f.Slurmish && len(f.Slurm)+len(f.Cgroup)+len(f.Gres)+len(f.PAM) == 0
}

// facts per path, newest layer winning.
func upsert[T interface{ at() site }](list []T, v T) []T {
	for i, x := range list {
		if x.at().Path == v.at().Path {
			if v.at().LayerIndex >= x.at().LayerIndex {
				list[i] = v
			}
			return list
		}
	}
	return append(list, v)
}

func (s site) at() site { return s }

func (n *NodeConfig) merge(target string, o *nodeFacts) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.targets[target]
	if st == nil {
		st = &nodeFacts{}
		n.targets[target] = st
	}
	st.Slurmish = st.Slurmish || o.Slurmish
	for _, x := range o.Slurm {
		st.Slurm = upsert(st.Slurm, x)
	}
	for _, x := range o.Cgroup {
		st.Cgroup = upsert(st.Cgroup, x)
	}
	for _, x := range o.Gres {
		st.Gres = upsert(st.Gres, x)
	}
	for _, x := range o.PAM {
		st.PAM = upsert(st.PAM, x)
	}
}

var _ scanners.StateKeeper = (*NodeConfig)(nil)

// StateName implements scanners.StateKeeper.
func (n *NodeConfig) StateName() string { return "misconfig/node" }

// RestoreState implements scanners.StateKeeper.
func (n *NodeConfig) RestoreState(ctx context.Context, target string, data []byte) error {
	var f nodeFacts
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("node configuration state: %w", err)
	}
	n.merge(target, &f)
	return nil
}

// FinishTarget judges slurm.conf with the cgroup.conf and gres.conf beside
// it, and sshd's PAM stack on a Slurm node.
func (n *NodeConfig) FinishTarget(ctx context.Context, t scanners.Target) ([]scanners.Finding, error) {
	n.mu.Lock()
	st := n.targets[t.Name]
	delete(n.targets, t.Name)
	n.mu.Unlock()
	if st == nil {
		return nil, nil
	}
	var out []scanners.Finding
	at := func(s site, p string, line int, rule scanners.Rule, sev scanners.Severity, evidence, msg string) {
		a := scanners.Artifact{Target: t.Name, Path: s.Path, Layer: s.Layer, Commit: s.Commit, Note: s.Note}
		if p != "" {
			a.Path = p
		}
		f := scanners.At(&a, rule, line, ruleMessage(rule, msg))
		f.Severity = sev
		f.Evidence = clip(evidence, 120)
		out = append(out, f)
	}
	byPath := func(a, b site) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(st.Slurm, func(a, b slurmFact) int { return byPath(a.site, b.site) })
	slices.SortFunc(st.PAM, func(a, b pamFact) int { return byPath(a.site, b.site) })
	beside := func(conf, name string) string { return path.Join(path.Dir(conf), name) }
	for _, s := range st.Slurm {
		gpu := fmt.Sprintf("%s:%d declares GPU GRES (%s)", s.GPUPath, s.GPULine, s.GPUWhat)
		cg := findSite(st.Cgroup, beside(s.Path, "cgroup.conf"))
		switch {
		case cg == nil:
			at(s.site, "", 0, RuleSlurmDevicesUnconstrained, RuleSlurmDevicesUnconstrained.Severity, "no cgroup.conf",
				gpu+", but no cgroup.conf is beside "+s.Path+", so ConstrainDevices is at its default, no")
		case cg.Disabled:
			at(cg.site, cg.PluginPath, cg.PluginLine, RuleSlurmDevicesUnconstrained, RuleSlurmDevicesUnconstrained.Severity, "CgroupPlugin=disabled",
				"CgroupPlugin=disabled turns off cgroup enforcement while "+gpu)
		case !strings.EqualFold(cg.Devices, "yes"):
			ev, what := "ConstrainDevices unset", "ConstrainDevices is not set (its default is no)"
			if cg.Devices != "" {
				ev, what = "ConstrainDevices="+cg.Devices, "ConstrainDevices="+cg.Devices
			}
			at(cg.site, cg.DevicesPath, cg.DevicesLine, RuleSlurmDevicesUnconstrained, RuleSlurmDevicesUnconstrained.Severity, ev,
				what+" while "+gpu)
		}
		g := findSite(st.Gres, beside(s.Path, "gres.conf"))
		switch {
		case g == nil:
			at(s.site, s.GPUPath, s.GPULine, RuleSlurmGRESUnfenced, scanners.SeverityMedium, "no gres.conf",
				gpu+", but no gres.conf is beside "+s.Path+" to name their device files")
		case !g.GPU && !g.AutoDetect:
			at(g.site, "", 0, RuleSlurmGRESUnfenced, RuleSlurmGRESUnfenced.Severity, "no Name=gpu, no AutoDetect",
				gpu+", but "+g.Path+" has no Name=gpu line and no AutoDetect")
		}
	}
	if st.Slurmish {
		for _, p := range st.PAM {
			at(p.site, "", 0, RuleSlurmSSHOutsideAllocation, RuleSlurmSSHOutsideAllocation.Severity, "no pam_slurm_adopt",
				"sshd's account stack has no pam_slurm_adopt on a Slurm node (the target holds its Slurm configuration): an ssh login runs outside every job")
		}
	}
	return out, nil
}

func findSite[T interface{ at() site }](list []T, p string) *T {
	for i := range list {
		if list[i].at().Path == p {
			return &list[i]
		}
	}
	return nil
}
