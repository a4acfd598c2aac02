package node

import (
	"slices"

	"github.com/mlwarden/mlwarden/scanners"
)

// The node check's rules. Their IDs are a public contract.
var (
	RuleGPUProcessOutsideAllocation = rule("gpu-process-outside-allocation", scanners.SeverityHigh,
		"A process uses a GPU outside every Slurm job and Kubernetes pod",
		"The scheduler must be the only path to a GPU: a process on a GPU whose cgroup is in no job and no pod (and that is no known NVIDIA daemon) is how an unauthorised workload, often a miner, hides in plain sight.",
		"Find out who started it (its user, parent and executable in the report or the --capture bundle); fence GPUs with Slurm's ConstrainDevices=yes or the container runtime's device cgroup.")
	RuleMinerProcess = rule("miner-process", scanners.SeverityCritical,
		"A crypto-miner runs on the node",
		"A known miner binary or a stratum pool URL on a command line is the usual payload of a stolen cluster account.",
		"Preserve evidence first (--capture), then stop the process, find how it got in (its parent, cron, user units, the account's SSH keys) and rotate the account's credentials.")
	RuleMinerConnection = rule("miner-connection", scanners.SeverityCritical,
		"A process holds a connection to a mining-pool port",
		"An established TCP connection to a port mining pools use (3333, 4444, 14444… from Falco's miner_ports, less the web ports) is how a miner gets its work.",
		"Preserve evidence (--capture), then stop the process and block the destination; check what started it.")
	RuleKernelThreadMasquerade = rule("kernel-thread-masquerade", scanners.SeverityCritical,
		"A user process poses as a kernel thread",
		"Malware names itself kworker/…, [kthreadd] or ksoftirqd/… so that ps output hides it; a real kernel thread has no executable, carries PF_KTHREAD and is a child of kthreadd (PID 2).",
		"Preserve evidence (--capture), then stop the process and find what started it.")
	RuleNotebookExposed = rule("notebook-exposed", scanners.SeverityCritical,
		"A Jupyter server listens on all interfaces",
		"A notebook reachable from the network is a shell on the node for whoever gets past its authentication; with token and password off, for anyone.",
		"Bind it to 127.0.0.1 and reach it through an SSH tunnel; keep the token on.")
	RuleServiceExposed = rule("service-exposed", scanners.SeverityMedium,
		"An ML service listens on all interfaces",
		"Ray's dashboard, TensorBoard, MLflow, vLLM, SGLang, Triton, Gradio and Ollama have weak or no authentication: on all interfaces anyone on the network uses them (Ray's job API runs code).",
		"Bind it to 127.0.0.1 and reach it through an SSH tunnel or an authenticating proxy.")
	RulePersistenceCron = rule("persistence-cron", scanners.SeverityHigh,
		"A cron table runs something suspicious, or a user crontab on a compute node",
		"Cron is how an intruder comes back after a reboot; on a Slurm compute node whose sshd adopts sessions into jobs, a user's cron job runs outside every job's cgroup.",
		"Remove the entry if nobody can account for it; on compute nodes, deny users cron (cron.allow).")
	RulePersistenceUserService = rule("persistence-user-service", scanners.SeverityHigh,
		"A lingering user's systemd units run at boot",
		"loginctl enable-linger starts a user's units at boot and keeps them after logout, outside every job; pam_slurm_adopt requires user managers to be off on compute nodes.",
		"Disable lingering (loginctl disable-linger USER) and remove the units if nobody can account for them.")
	RuleGPUDeviceUnfenced = rule("gpu-device-unfenced", scanners.SeverityHigh,
		"GPU device nodes are world-writable and nothing fences them",
		"The driver's default NVreg_DeviceFileMode 0666 lets every user open every GPU; only cgroup device control (Slurm's ConstrainDevices=yes, a container runtime's device cgroup) keeps a job to its own.",
		"Set ConstrainDevices=yes in cgroup.conf (with TaskPlugin=task/cgroup), or NVreg_DeviceFileMode=0660 with a group only the scheduler's jobs get.")
)

func rule(name string, sev scanners.Severity, title, why, fix string) scanners.Rule {
	return scanners.Rule{ID: scanners.CheckNode + "/" + name, Check: scanners.CheckNode, Severity: sev, Title: title, Why: why, Fix: fix}
}

var allRules = []scanners.Rule{
	RuleGPUProcessOutsideAllocation, RuleMinerProcess, RuleMinerConnection, RuleKernelThreadMasquerade,
	RuleNotebookExposed, RuleServiceExposed, RulePersistenceCron, RulePersistenceUserService, RuleGPUDeviceUnfenced,
}

// Rules lists the node check's rules.
func Rules() []scanners.Rule { return slices.Clone(allRules) }
