package node

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/misconfig"
)

// Judge returns the findings the node rules make of an audit, in a stable
// order, and the PIDs they flag (for --capture).
func Judge(a *Audit) ([]scanners.Finding, []int) {
	j := &judge{a: a, flagged: map[int]bool{}}
	j.gpuProcesses()
	j.miners()
	j.connections()
	j.kernelThreads()
	j.listeners()
	j.cron()
	j.units()
	j.devicesUnfenced()
	var pids []int
	for pid := range j.flagged {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return j.out, pids
}

// ruleSeverity, given to add, keeps the rule's own severity; noSeverity
// is judgeCommand's "nothing suspicious".
const (
	ruleSeverity scanners.Severity = -1
	noSeverity   scanners.Severity = -2
)

type judge struct {
	a       *Audit
	out     []scanners.Finding
	flagged map[int]bool
}

func (j *judge) add(r scanners.Rule, sev scanners.Severity, p string, line int, evidence, msg string) {
	art := &scanners.Artifact{Target: j.a.Name, TargetKind: scanners.KindNode, Path: p}
	f := scanners.At(art, r, line, msg)
	if sev != ruleSeverity {
		f.Severity = sev
	}
	f.Evidence = clip(evidence, 120)
	j.out = append(j.out, f)
}

func (j *judge) proc(r scanners.Rule, sev scanners.Severity, p *Process, evidence, msg string) {
	j.flagged[p.PID] = true
	j.add(r, sev, "proc/"+strconv.Itoa(p.PID), 0, evidence, msg)
}

func (p *Process) who() string {
	s := fmt.Sprintf("PID %d %q (uid %d, parent %d", p.PID, p.Name(), p.UID, p.PPID)
	if p.HasExe {
		s += ", executable " + clip(p.Exe, 120)
	}
	return s + ")"
}

// gpuDaemons are the NVIDIA and scheduler daemons that hold GPUs outside
// any allocation by design.
var gpuDaemons = map[string]bool{
	"nvidia-persistenced": true, "nv-hostengine": true, "dcgm-exporter": true, "dcgmi": true,
	"nvidia-device-plugin": true, "nvidia-device-plu": true, "nvidia-smi": true, "nvidia-cuda-mps-server": true,
	"nvidia-cuda-mps-control": true, "nvidia-cuda-mps-": true, "gpu-kubelet-plug": true, "nvidia-dcgm": true,
	"Xorg": true, "slurmd": true, "slurmstepd": true,
}

func (j *judge) gpuProcesses() {
	for _, g := range j.a.GPU.Processes {
		p := j.a.Process(g.PID)
		if p == nil {
			j.a.Notes = append(j.a.Notes, fmt.Sprintf("GPU process %d (%s) is not under proc: run in the host PID namespace (hostPID), or the process has exited", g.PID, clip(g.Name, 60)))
			continue
		}
		if p.Allocation.Kind != "" || gpuDaemons[p.Comm] || gpuDaemons[path.Base(p.Exe)] {
			continue
		}
		cg := "no cgroup"
		if len(p.Cgroups) > 0 {
			cg = "cgroup " + clip(p.Cgroups[0], 120)
		}
		j.proc(RuleGPUProcessOutsideAllocation, ruleSeverity, p, p.Name()+" on "+orUnknown(g.GPU),
			fmt.Sprintf("%s uses GPU %s (%s) but is in no Slurm job and no Kubernetes pod (%s): the scheduler did not give it this GPU. Find out who started it; fence GPUs with ConstrainDevices=yes or the runtime's device cgroup", p.who(), orUnknown(g.GPU), orUnknown(g.UsedMemory), cg))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// minerBinaries are miner program names beyond the misconfig check's:
// Falco's miner_binaries list (falco-sandbox_rules.yaml) and more.
var minerBinaries = map[string]bool{
	"xmr-stak": true, "xmr-stak-cpu": true, "xmr-stak-rx": true, "minerd": true, "cpuminer-multi": true,
	"cpuminer-opt": true, "gminer": true, "bminer": true, "wildrig": true, "wildrig-multi": true,
	"srbminer": true, "srbminer-multi": true, "miner.sh": false, "xmrig-notls": true, "kdevtmpfsi": true,
	"kinsing": true, "c3pool_miner": true, "nanominer": true, "teamredminer": true, "t-rex": true,
}

func isMinerName(name string) bool {
	name = strings.ToLower(name)
	return minerBinaries[name] || misconfig.IsMinerName(name)
}

func (j *judge) miners() {
	for i := range j.a.Processes {
		p := &j.a.Processes[i]
		names := []string{p.Comm}
		if p.HasExe {
			names = append(names, path.Base(strings.TrimSuffix(p.Exe, " (deleted)")))
		}
		if len(p.Argv) > 0 {
			names = append(names, path.Base(p.Argv[0]))
		}
		hit := ""
		for _, n := range names {
			if isMinerName(n) {
				hit = strings.ToLower(n)
				break
			}
		}
		cmd := strings.Join(p.Argv, " ")
		switch {
		case hit != "":
			j.proc(RuleMinerProcess, ruleSeverity, p, hit, fmt.Sprintf("%s is the crypto-miner %s. Preserve evidence (--capture), stop it, and find how it got in", p.who(), hit))
		case misconfig.HasPoolURL(cmd):
			j.proc(RuleMinerProcess, ruleSeverity, p, "stratum pool URL", fmt.Sprintf("%s has a stratum mining-pool URL on its command line: it is a miner. Preserve evidence (--capture), stop it, and find how it got in", p.who()))
		}
	}
}

// minerPorts are the pool ports of Falco's miner_ports list
// (falco-sandbox_rules.yaml) less the ports ordinary web and mail traffic
// uses (25, 8000, 8001, 8008, 8080, 8118, 8888, 8899): on a GPU node those
// are model servers and proxies, and an established connection to one is
// no sign of mining.
var minerPorts = map[uint16]bool{
	3333: true, 3334: true, 3335: true, 3336: true, 3357: true, 4444: true, 5555: true, 5556: true,
	5588: true, 5730: true, 6099: true, 6666: true, 7777: true, 7778: true, 8333: true, 9332: true,
	9999: true, 14433: true, 14444: true, 45560: true, 45700: true,
}

func (j *judge) connections() {
	owners := j.a.owners()
	for _, s := range j.a.Sockets {
		if s.State != 1 || !minerPorts[s.Remote.Port()] || !remoteWanted(s.Remote) {
			continue
		}
		for _, i := range owners[s.Inode] {
			p := &j.a.Processes[i]
			if p.NetNS != s.NetNS && s.NetNS != "" {
				continue
			}
			j.proc(RuleMinerConnection, ruleSeverity, p, s.Remote.String(),
				fmt.Sprintf("%s holds an established connection to %s, a mining-pool port. Preserve evidence (--capture), stop it, and block the destination", p.who(), s.Remote))
		}
	}
}

// kthreadNames are the names kernel threads have and malware borrows.
func kthreadName(n string) bool {
	if strings.HasPrefix(n, "[") && strings.HasSuffix(n, "]") && len(n) > 2 {
		return true
	}
	for _, p := range []string{"kworker/", "ksoftirqd/", "kswapd", "migration/", "rcu_sched", "kthreadd", "kdevtmpfs", "watchdog/"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

func (j *judge) kernelThreads() {
	for i := range j.a.Processes {
		p := &j.a.Processes[i]
		argv0 := ""
		if len(p.Argv) > 0 {
			argv0 = p.Argv[0]
		}
		if !kthreadName(p.Comm) && !kthreadName(argv0) {
			continue
		}
		var why []string
		if p.HasExe {
			why = append(why, "it has an executable ("+clip(p.Exe, 120)+")")
		}
		if !p.Kthread() {
			why = append(why, "its flags lack PF_KTHREAD")
		}
		if p.PPID != 2 && p.PID != 2 {
			why = append(why, fmt.Sprintf("its parent is %d, not kthreadd (2)", p.PPID))
		}
		if len(why) == 0 {
			continue
		}
		name := p.Comm
		if argv0 != "" && kthreadName(argv0) {
			name = argv0
		}
		j.proc(RuleKernelThreadMasquerade, ruleSeverity, p, name,
			fmt.Sprintf("%s is named like a kernel thread (%s) but %s: a user process hiding in ps output. Preserve evidence (--capture), stop it, and find what started it", p.who(), clip(name, 60), strings.Join(why, ", ")))
	}
}

// expected listeners on all interfaces: reported at info at most.
var expectedListeners = map[string]bool{"sshd": true, "slurmd": true, "sshd-session": true}

func (j *judge) listeners() {
	owners := j.a.owners()
	seen := map[string]bool{}
	for _, s := range j.a.Sockets {
		if s.State != 0x0A || !s.Local.Addr().IsUnspecified() {
			continue
		}
		for _, i := range owners[s.Inode] {
			p := &j.a.Processes[i]
			key := strconv.Itoa(p.PID) + "/" + strconv.Itoa(int(s.Local.Port()))
			if seen[key] {
				continue
			}
			seen[key] = true
			j.listener(p, s.Local)
		}
	}
}

func (j *judge) listener(p *Process, local netip.AddrPort) {
	at := fmt.Sprintf("%s listens on %s", p.who(), local)
	if expectedListeners[p.Comm] {
		return // expected on every node: never above info, and not news
	}
	if l, ok := misconfig.JudgeListener(p.Argv); ok {
		r := RuleServiceExposed
		if l.Notebook {
			r = RuleNotebookExposed
		}
		j.proc(r, l.Severity, p, local.String()+" "+l.Evidence, at+": "+l.Message)
		return
	}
	if p.Comm == "tritonserver" || len(p.Argv) > 0 && path.Base(p.Argv[0]) == "tritonserver" {
		j.proc(RuleServiceExposed, ruleSeverity, p, local.String()+" tritonserver",
			at+": the Triton Inference Server has no authentication of its own, so anyone on the network can load and run models. Bind it to 127.0.0.1 or put an authenticating proxy in front")
	}
}

// compute is a Slurm compute node whose sshd adopts sessions into jobs:
// pam_slurm_adopt forbids user managers there, and a user's own cron job
// runs outside every job.
func (j *judge) compute() bool { return j.a.SlurmNode && j.a.PAMSlurmAdopt }

func (j *judge) cron() {
	for _, e := range j.a.Cron {
		sev, why := judgeCommand(e.Command)
		switch {
		case sev != noSeverity:
		case e.UserTable && j.compute():
			sev, why = scanners.SeverityMedium, "is a user's cron job on a Slurm compute node, where it runs outside every job's cgroup"
		case e.UserTable:
			sev, why = scanners.SeverityLow, "is a user's cron job"
		default:
			continue // a package's /etc/cron.d entry
		}
		who := "root"
		if e.User != "" {
			who = e.User
		}
		j.add(RulePersistenceCron, sev, e.Path, e.Line, clip(e.Command, 100),
			fmt.Sprintf("cron runs %q as %s: it %s. Remove it if nobody can account for it", clip(e.Command, 200), who, why))
	}
}

func (j *judge) units() {
	withUnits := map[string]bool{}
	for _, u := range j.a.Units {
		withUnits[u.User] = true
		sev, why := judgeCommand(u.Command)
		switch {
		case sev != noSeverity:
		case j.compute():
			sev, why = scanners.SeverityMedium, "runs at boot under a lingering user manager on a Slurm compute node, outside every job (pam_slurm_adopt requires user managers off)"
		default:
			sev, why = scanners.SeverityLow, "runs at boot under a lingering user manager"
		}
		msg := fmt.Sprintf("user %s's unit runs %q: it %s. Disable lingering (loginctl disable-linger %s) and remove the unit if nobody can account for it", u.User, clip(u.Command, 200), why, u.User)
		if u.Command == "" {
			msg = fmt.Sprintf("user %s lingers and has this unit, which starts at boot. Disable lingering (loginctl disable-linger %s) if nobody can account for it", u.User, u.User)
		}
		j.add(RulePersistenceUserService, sev, u.Path, u.Line, clip(u.Command, 100), msg)
	}
	for _, user := range j.a.Lingering {
		if withUnits[user] {
			continue
		}
		sev := scanners.SeverityLow
		if j.compute() {
			sev = scanners.SeverityMedium
		}
		j.add(RulePersistenceUserService, sev, "var/lib/systemd/linger/"+user, 0, user,
			fmt.Sprintf("user %s lingers: a user manager starts at boot and runs that user's units outside every job. Disable lingering (loginctl disable-linger %s) if nobody needs it", user, user))
	}
}

func (j *judge) devicesUnfenced() {
	if j.a.ConstrainDevices {
		return
	}
	if j.a.Kubelet && !j.a.SlurmNode {
		return // pods' devices are fenced by the container runtime's device cgroup
	}
	sev := scanners.SeverityMedium
	why := "and no Slurm ConstrainDevices=yes or container runtime fences devices on this node"
	if j.a.SlurmNode {
		sev = scanners.SeverityHigh
		why = "and Slurm's cgroup.conf does not set ConstrainDevices=yes: any job, or any user who logs in, opens every GPU, whatever it was allocated"
	}
	for _, d := range j.a.Devices {
		if d.Mode.Perm()&0o002 == 0 {
			continue
		}
		j.add(RuleGPUDeviceUnfenced, sev, d.Path, 0, fmt.Sprintf("%s %04o", d.Path, d.Mode.Perm()),
			fmt.Sprintf("/%s is world-writable (mode %04o, the driver's default NVreg_DeviceFileMode) %s. Set ConstrainDevices=yes, or NVreg_DeviceFileMode=0660 with a group only jobs get", d.Path, d.Mode.Perm(), why))
	}
}
