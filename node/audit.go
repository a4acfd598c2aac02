// Package node is `mlwarden node`: a live audit of a GPU node for the signs
// of an intrusion (a process on a GPU outside every allocation, a miner, a
// fake kernel thread, an exposed notebook, persistence in cron or user
// units) and the isolation gaps that let one in (world-writable GPU device
// nodes with nothing fencing them). It reads a node tree — / on the node
// itself, or a copied or mounted one (--root) — through an os.Root: every
// path stays inside the root and links are read as links, never followed
// out of it. It reads, bounded (Limits), and never changes anything.
//
// Collect gathers the facts (an Audit); Check judges them as the pipeline's
// "node" check, and Source hands the node's configuration files to the
// other checks (misconfig) and the inventory to the report, so that every
// finding goes through the same suppressions, reports and exit codes as
// `mlwarden scan` (docs/design/node.md).
package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/node/procfs"
)

// Process is one /proc/PID as the audit read it.
type Process struct {
	PID   int      `json:"pid"`
	PPID  int      `json:"ppid"`
	UID   int      `json:"uid"`
	Comm  string   `json:"comm"`
	Argv  []string `json:"argv,omitempty"`
	Flags uint64   `json:"flags"`
	// Exe is the target of /proc/PID/exe, read as a link; HasExe is false
	// when there is none (a kernel thread).
	Exe    string `json:"exe,omitempty"`
	HasExe bool   `json:"has_exe"`
	// Cgroups are the paths of /proc/PID/cgroup.
	Cgroups    []string   `json:"cgroups,omitempty"`
	Allocation Allocation `json:"allocation,omitzero"`
	// NetNS is the target of /proc/PID/ns/net ("net:[4026531840]").
	NetNS string `json:"netns,omitempty"`
	// Sockets are the inodes of the sockets among its open files.
	Sockets []uint64 `json:"-"`
}

// Kthread reports the kernel's PF_KTHREAD flag.
func (p *Process) Kthread() bool { return p.Flags&procfs.PFKthread != 0 }

// Name is the process's name for a message: comm, and argv[0]'s base when
// it differs.
func (p *Process) Name() string {
	if len(p.Argv) > 0 {
		if b := path.Base(p.Argv[0]); b != p.Comm && b != "." && b != "/" {
			return p.Comm + " (" + clip(b, 60) + ")"
		}
	}
	return p.Comm
}

// Socket is a TCP socket of a network namespace.
type Socket struct {
	procfs.Socket
	NetNS string
}

// GPUProcess is a process NVML (or nvidia-smi's CSV) says runs on a GPU.
type GPUProcess struct {
	PID        int    `json:"pid"`
	Name       string `json:"name,omitempty"`
	UsedMemory string `json:"used_memory,omitempty"`
	GPU        string `json:"gpu,omitempty"` // UUID
}

// GPU is one device as NVML reports it.
type GPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	Name  string `json:"name,omitempty"`
	MIG   bool   `json:"mig"`
}

// GPUFacts are what NVML or --gpu-processes gave.
type GPUFacts struct {
	// Source is "nvml", a --gpu-processes file, or "" (none).
	Source    string       `json:"source,omitempty"`
	Driver    string       `json:"driver,omitempty"`
	GPUs      []GPU        `json:"gpus,omitempty"`
	Processes []GPUProcess `json:"processes,omitempty"`
	// Note says why there are none (NVML absent: a note, not a failure).
	Note string `json:"note,omitempty"`
}

// Device is a /dev/nvidia* node.
type Device struct {
	Path string      `json:"path"`
	Mode fs.FileMode `json:"mode"`
}

// Audit is everything one Collect read.
type Audit struct {
	// Name names the node (its hostname, or the root directory).
	Name      string
	Root      string
	Processes []Process
	byPID     map[int]int
	Sockets   []Socket
	GPU       GPUFacts
	Devices   []Device
	Cron      []CronEntry
	Lingering []string
	Units     []Unit
	// Slurm facts read from the node's files and processes.
	SlurmNode        bool
	ConstrainDevices bool
	PAMSlurmAdopt    bool
	Kubelet          bool
	// Notes are facts a reader needs (NVML absent, a PID namespace).
	Notes []string
	// Incomplete lists the limits reached and what could not be read.
	Incomplete []string
	// fdDenied counts processes whose open files could not be read.
	fdDenied int
	// configFiles are the node's configuration files found, for the
	// misconfig check.
	configFiles []string
}

// Process returns the process with pid, or nil.
func (a *Audit) Process(pid int) *Process {
	if i, ok := a.byPID[pid]; ok {
		return &a.Processes[i]
	}
	return nil
}

// Options configure Collect.
type Options struct {
	Limits Limits
	// GPUProcesses is nvidia-smi --query-compute-apps CSV (--gpu-processes);
	// when nil, NVML is asked (NoNVML: not).
	GPUProcesses []byte
	GPUSource    string
	NoNVML       bool
}

// Collect reads the node tree under root.
func Collect(ctx context.Context, root string, o Options) (*Audit, error) {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("node root: %w", err)
	}
	defer rt.Close()
	r := reader{root: rt}
	lim := o.Limits.withDefaults()
	a := &Audit{Root: root, byPID: map[int]int{}}
	a.Name = nodeName(r, root)
	if err := a.processes(ctx, r, lim); err != nil {
		return nil, err
	}
	if a.fdDenied > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("the open files of %d processes could not be read (permission denied: run as root): their sockets are not matched to them", a.fdDenied))
	}
	a.sockets(r, lim)
	a.config(r, lim)
	a.devices(r, lim)
	a.persistence(r, lim)
	a.gpus(ctx, o, lim)
	return a, nil
}

func nodeName(r reader, root string) string {
	for _, f := range []string{"proc/sys/kernel/hostname", "etc/hostname"} {
		if b, err := r.readFile(f, 256); err == nil {
			if h := strings.TrimSpace(string(b)); h != "" && !strings.ContainsAny(h, "/\x00 \n") {
				return "node:" + h
			}
		}
	}
	return "node:" + root
}

func (a *Audit) incomplete(format string, args ...any) {
	a.Incomplete = append(a.Incomplete, fmt.Sprintf(format, args...))
}

func (a *Audit) processes(ctx context.Context, r reader, lim Limits) error {
	ents, err := r.readDir("proc", lim.MaxProcesses*2+64)
	if err != nil && !errors.Is(err, errTooLarge) {
		if errors.Is(err, fs.ErrNotExist) {
			a.Notes = append(a.Notes, "no proc directory under the root: no processes read")
			return nil
		}
		return fmt.Errorf("read processes: %w", err)
	}
	if err != nil {
		a.incomplete("%v", err)
	}
	for _, e := range ents {
		pid, perr := strconv.Atoi(e.Name())
		if perr != nil || pid <= 0 {
			continue
		}
		if len(a.Processes) == lim.MaxProcesses {
			a.incomplete("processes: more than %d; the rest were not read", lim.MaxProcesses)
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		p, ok := a.process(r, lim, pid)
		if !ok {
			continue // exited while we read
		}
		a.byPID[pid] = len(a.Processes)
		a.Processes = append(a.Processes, p)
	}
	return nil
}

func (a *Audit) process(r reader, lim Limits, pid int) (Process, bool) {
	dir := "proc/" + strconv.Itoa(pid)
	b, err := r.readFile(dir+"/stat", lim.MaxFileBytes)
	if err != nil {
		return Process{}, false
	}
	st, err := procfs.ParseStat(b)
	if err != nil {
		a.incomplete("%s/stat: %v", dir, err)
		return Process{}, false
	}
	p := Process{PID: pid, PPID: st.PPID, Comm: st.Comm, Flags: st.Flags, UID: -1}
	if b, err := r.readFile(dir+"/status", lim.MaxFileBytes); err == nil {
		s := procfs.ParseStatus(b)
		p.UID = s.UID
	}
	if b, err := r.readFile(dir+"/cmdline", lim.MaxFileBytes); err == nil || errors.Is(err, errTooLarge) {
		p.Argv, _ = procfs.ParseNulList(b, 4096)
	}
	if t, err := r.readlink(dir + "/exe"); err == nil {
		p.Exe, p.HasExe = t, true
	}
	if b, err := r.readFile(dir+"/cgroup", lim.MaxFileBytes); err == nil {
		for _, l := range procfs.ParseCgroup(b, 64) {
			p.Cgroups = append(p.Cgroups, l.Path)
		}
	}
	p.Allocation = Classify(p.Cgroups)
	if t, err := r.readlink(dir + "/ns/net"); err == nil {
		p.NetNS = t
	}
	fds, err := r.readDir(dir+"/fd", lim.MaxFDs)
	if errors.Is(err, fs.ErrPermission) {
		a.fdDenied++
	}
	if errors.Is(err, errTooLarge) {
		a.incomplete("%s: more than %d open files; sockets beyond them are not matched", dir, lim.MaxFDs)
	}
	for _, fd := range fds {
		if t, err := r.readlink(dir + "/fd/" + fd.Name()); err == nil {
			if ino, ok := procfs.SocketInode(t); ok {
				p.Sockets = append(p.Sockets, ino)
			}
		}
	}
	return p, true
}

// sockets reads /proc/PID/net/tcp{,6} once per network namespace.
func (a *Audit) sockets(r reader, lim Limits) {
	seen := map[string]bool{}
	for i := range a.Processes {
		p := &a.Processes[i]
		if len(p.Sockets) == 0 {
			continue
		}
		ns := p.NetNS
		if seen[ns] {
			continue
		}
		total := 0
		for _, f := range []string{"tcp", "tcp6"} {
			name := "proc/" + strconv.Itoa(p.PID) + "/net/" + f
			b, err := r.readFile(name, lim.MaxNetBytes)
			if errors.Is(err, errTooLarge) {
				a.incomplete("%v: sockets beyond it are not read", err)
			} else if err != nil {
				// Not readable through this process (it exited, or a
				// copied tree kept the tables of another): the next
				// process of the namespace is tried.
				continue
			}
			seen[ns] = true
			socks, bad, more := procfs.ParseNetTCP(b, lim.MaxSockets-total)
			if bad > 0 {
				a.incomplete("%s: %d lines could not be read", name, bad)
			}
			if more {
				a.incomplete("%s: more than %d sockets in network namespace %s; the rest were not read", name, lim.MaxSockets, ns)
			}
			total += len(socks)
			for _, s := range socks {
				a.Sockets = append(a.Sockets, Socket{Socket: s, NetNS: ns})
			}
		}
	}
}

// owners maps socket inodes to the processes holding them.
func (a *Audit) owners() map[uint64][]int {
	m := map[uint64][]int{}
	for i := range a.Processes {
		for _, ino := range a.Processes[i].Sockets {
			if len(m[ino]) < 16 {
				m[ino] = append(m[ino], i)
			}
		}
	}
	return m
}

// config reads the Slurm and PAM facts the node rules need, and lists the
// configuration files the misconfig check reads.
func (a *Audit) config(r reader, lim Limits) {
	for _, dir := range []string{"etc/slurm", "etc/slurm-llnl"} {
		ents, _ := r.readDir(dir, lim.MaxEntries)
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			name := dir + "/" + e.Name()
			a.configFiles = append(a.configFiles, name)
			switch e.Name() {
			case "slurm.conf":
				a.SlurmNode = true
			case "cgroup.conf":
				if b, err := r.readFile(name, lim.MaxFileBytes); err == nil && constrainDevices(b) {
					a.ConstrainDevices = true
				}
			}
		}
	}
	if b, err := r.readFile("etc/pam.d/sshd", lim.MaxFileBytes); err == nil {
		a.configFiles = append(a.configFiles, "etc/pam.d/sshd")
		a.PAMSlurmAdopt = pamSlurmAdopt(b)
	}
	for _, f := range []string{"proc/driver/nvidia/params", "etc/nvidia-container-toolkit/config.toml", "etc/nvidia-container-runtime/config.toml"} {
		if fi, err := r.lstat(f); err == nil && fi.Mode().IsRegular() {
			a.configFiles = append(a.configFiles, f)
		}
	}
	for _, dir := range []string{"etc/modprobe.d", "etc/cdi", "var/run/cdi", "run/cdi"} {
		ents, err := r.readDir(dir, lim.MaxEntries)
		if errors.Is(err, errTooLarge) {
			a.incomplete("%v", err)
		}
		for _, e := range ents {
			if e.Type().IsRegular() {
				a.configFiles = append(a.configFiles, dir+"/"+e.Name())
			}
		}
	}
	for _, p := range a.Processes {
		switch p.Comm {
		case "slurmd":
			a.SlurmNode = true
		case "kubelet":
			a.Kubelet = true
		}
	}
}

// constrainDevices reads ConstrainDevices=yes from cgroup.conf (keys are
// case-insensitive, as Slurm reads them).
func constrainDevices(b []byte) bool {
	on := false
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "ConstrainDevices") {
			on = strings.EqualFold(strings.TrimSpace(v), "yes")
		}
	}
	return on
}

// pamSlurmAdopt reports pam_slurm_adopt in sshd's account stack.
func pamSlurmAdopt(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "account" && slicesContainsPrefix(f[2:], "pam_slurm_adopt") {
			return true
		}
	}
	return false
}

func slicesContainsPrefix(ws []string, s string) bool {
	for _, w := range ws {
		if strings.Contains(path.Base(w), s) {
			return true
		}
	}
	return false
}

func (a *Audit) devices(r reader, lim Limits) {
	ents, err := r.readDir("dev", lim.MaxEntries)
	if errors.Is(err, errTooLarge) {
		a.incomplete("%v", err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "nvidia") || e.IsDir() {
			continue
		}
		fi, err := r.lstat("dev/" + e.Name())
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		a.Devices = append(a.Devices, Device{Path: "dev/" + e.Name(), Mode: fi.Mode()})
	}
}

// remoteWanted reports a remote address a connection rule looks at: not
// loopback, not unspecified.
func remoteWanted(ap netip.AddrPort) bool {
	return ap.IsValid() && !ap.Addr().IsLoopback() && !ap.Addr().IsUnspecified()
}

func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
