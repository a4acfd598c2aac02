package node_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/node"
	"github.com/mlwarden/mlwarden/node/nodetest"
	"github.com/mlwarden/mlwarden/scanners"
)

func audit(t *testing.T, tr *nodetest.Tree, gpu string) *node.Audit {
	t.Helper()
	tr.Close()
	a, err := node.Collect(context.Background(), tr.Dir, node.Options{GPUProcesses: []byte(gpu), GPUSource: "gpu.csv"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Incomplete) > 0 {
		t.Fatalf("incomplete: %v", a.Incomplete)
	}
	return a
}

func keys(fs []scanners.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s %s", f.RuleID, f.Severity, f.Path))
	}
	slices.Sort(out)
	return out
}

func TestCleanNode(t *testing.T) {
	a := audit(t, nodetest.Clean(t.TempDir()), nodetest.CleanGPU)
	fs, _ := node.Judge(a)
	for _, f := range fs {
		if f.Severity >= scanners.SeverityMedium {
			t.Errorf("clean node: %s %s %s: %s", f.RuleID, f.Severity, f.Path, f.Message)
		}
	}
	if a.Name != "node:node17" {
		t.Errorf("name %q", a.Name)
	}
	inv := a.Inventory()
	jobs := map[string]string{}
	for _, c := range inv {
		if c.Kind == node.ComponentGPUProcess {
			jobs[c.Properties["pid"]] = c.Properties["slurm_job"] + c.Properties["pod_uid"]
		}
	}
	want := map[string]string{"420": "", "1000": "4242", "1001": "4243", "1002": "s5K1KKYAYG5D00",
		"1003": "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901", "1004": "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f902"}
	for pid, w := range want {
		if jobs[pid] != w {
			t.Errorf("GPU process %s: allocation %q, want %q", pid, jobs[pid], w)
		}
	}
}

func TestIntrudedNode(t *testing.T) {
	tr := nodetest.Clean(t.TempDir())
	nodetest.Intrude(tr)
	a := audit(t, tr, nodetest.IntrudedGPU)
	fs, pids := node.Judge(a)
	got := keys(fs)
	want := []string{
		"node/gpu-device-unfenced high dev/nvidia0",
		"node/gpu-device-unfenced high dev/nvidiactl",
		"node/gpu-process-outside-allocation high proc/6666",
		"node/kernel-thread-masquerade critical proc/6666",
		"node/miner-connection critical proc/6666",
		"node/miner-process critical proc/6666",
		"node/miner-process critical proc/6667",
		"node/notebook-exposed critical proc/7000",
		"node/persistence-cron high var/spool/cron/crontabs/alice",
		"node/persistence-user-service high home/alice/.config/systemd/user/update.service",
		"node/service-exposed medium proc/7100",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(pids, []int{6666, 6667, 7000, 7100}) {
		t.Errorf("flagged %v", pids)
	}
	for _, f := range fs {
		for _, never := range []string{"proc/2", "proc/3", "proc/4", "proc/400", "proc/410", "proc/1000", "proc/1001", "proc/1002", "proc/1003", "proc/1004"} {
			if f.Path == never {
				t.Errorf("flagged %s: %s", never, f.Message)
			}
		}
	}
}

// TestRules is each rule's positive and negative cases on small trees.
func TestRules(t *testing.T) {
	type c struct {
		name  string
		build func(*nodetest.Tree)
		gpu   string
		want  []string // rule severity path
	}
	p := func(pr nodetest.Proc) func(*nodetest.Tree) { return func(t *nodetest.Tree) { t.Proc(pr) } }
	cases := []c{
		{"gpu outside", p(nodetest.Proc{PID: 10, PPID: 1, UID: 5, Argv: []string{"python3"}, Exe: "/usr/bin/python3"}), "10, python3, 1 MiB, GPU-0\n",
			[]string{"node/gpu-process-outside-allocation high proc/10"}},
		{"gpu in v1 job", p(nodetest.Proc{PID: 10, PPID: 1, Argv: []string{"python3"}, Exe: "/usr/bin/python3", Cgroup: nodetest.SlurmV1}), "10, python3, 1 MiB, GPU-0\n", nil},
		{"gpu in SLUID job", p(nodetest.Proc{PID: 10, PPID: 1, Argv: []string{"python3"}, Exe: "/usr/bin/python3", Cgroup: nodetest.SlurmSLUID}), "10, python3, 1 MiB, GPU-0\n", nil},
		{"gpu in pod", p(nodetest.Proc{PID: 10, PPID: 1, Argv: []string{"python3"}, Exe: "/usr/bin/python3", Cgroup: nodetest.PodCgroupfs}), "10, python3, 1 MiB, GPU-0\n", nil},
		{"gpu dcgm", p(nodetest.Proc{PID: 10, PPID: 1, Comm: "nv-hostengine", Exe: "/usr/bin/nv-hostengine"}), "10, nv-hostengine, 1 MiB, GPU-0\n", nil},
		{"miner by exe", p(nodetest.Proc{PID: 11, PPID: 1, Comm: "sysupdate", Argv: []string{"sysupdate"}, Exe: "/var/tmp/t-rex"}), "",
			[]string{"node/miner-process critical proc/11"}},
		{"miner stratum", p(nodetest.Proc{PID: 11, PPID: 1, Argv: []string{"./a", "-o", "stratum2+ssl://x:1"}, Exe: "/opt/a"}), "",
			[]string{"node/miner-process critical proc/11"}},
		{"not a miner", p(nodetest.Proc{PID: 11, PPID: 1, Argv: []string{"python3", "-m", "miner"}, Exe: "/usr/bin/python3"}), "", nil},
		{"pool port", p(nodetest.Proc{PID: 12, PPID: 1, Argv: []string{"app"}, Exe: "/opt/app", Sockets: []nodetest.Sock{{Local: "[2001:db8::2]:5000", Remote: "[2001:db8::1]:14444", State: 1, Inode: 9}}}), "",
			[]string{"node/miner-connection critical proc/12"}},
		{"web port", p(nodetest.Proc{PID: 12, PPID: 1, Argv: []string{"app"}, Exe: "/opt/app", Sockets: []nodetest.Sock{{Local: "10.0.0.1:5000", Remote: "192.0.2.1:8080", State: 1, Inode: 9}}}), "", nil},
		{"loopback pool port", p(nodetest.Proc{PID: 12, PPID: 1, Argv: []string{"app"}, Exe: "/opt/app", Sockets: []nodetest.Sock{{Local: "127.0.0.1:5000", Remote: "127.0.0.1:3333", State: 1, Inode: 9}}}), "", nil},
		{"fake kthread", p(nodetest.Proc{PID: 13, PPID: 1, Comm: "ksoftirqd/3", Kthread: false}), "",
			[]string{"node/kernel-thread-masquerade critical proc/13"}},
		{"bracket argv", p(nodetest.Proc{PID: 13, PPID: 2, Comm: "bash", Argv: []string{"[watchdogd]"}, Exe: "/bin/bash", Kthread: false}), "",
			[]string{"node/kernel-thread-masquerade critical proc/13"}},
		{"real kthread", p(nodetest.Proc{PID: 13, PPID: 2, Comm: "kworker/u8:1", Kthread: true}), "", nil},
		{"jupyter token on", p(nodetest.Proc{PID: 14, PPID: 1, Argv: []string{"jupyter", "notebook"}, Exe: "/usr/bin/python3", Sockets: []nodetest.Sock{{Local: "0.0.0.0:8888", State: 10, Inode: 9}}}), "",
			[]string{"node/notebook-exposed low proc/14"}},
		{"jupyter loopback", p(nodetest.Proc{PID: 14, PPID: 1, Argv: []string{"jupyter", "lab", "--NotebookApp.token="}, Exe: "/usr/bin/python3", Sockets: []nodetest.Sock{{Local: "127.0.0.1:8888", State: 10, Inode: 9}}}), "", nil},
		{"tensorboard", p(nodetest.Proc{PID: 15, PPID: 1, Argv: []string{"/usr/bin/python3", "/usr/local/bin/tensorboard", "--logdir", "x"}, Exe: "/usr/bin/python3", Sockets: []nodetest.Sock{{Local: "[::]:6006", State: 10, Inode: 9}}}), "",
			[]string{"node/service-exposed medium proc/15"}},
		{"sshd", p(nodetest.Proc{PID: 15, PPID: 1, Comm: "sshd", Argv: []string{"/usr/sbin/sshd"}, Exe: "/usr/sbin/sshd", Sockets: []nodetest.Sock{{Local: "0.0.0.0:22", State: 10, Inode: 9}}}), "", nil},
		{"cron tmp", func(t *nodetest.Tree) { t.File("etc/cron.d/x", "@reboot root /var/tmp/.s/run\n", 0o644) }, "",
			[]string{"node/persistence-cron high etc/cron.d/x"}},
		{"cron package", func(t *nodetest.Tree) {
			t.File("etc/cron.d/x", "SHELL=/bin/sh\n0 * * * * root run-parts /etc/cron.hourly\n", 0o644)
		}, "", nil},
		{"user crontab", func(t *nodetest.Tree) { t.File("var/spool/cron/bob", "0 1 * * * ./backup.sh\n", 0o600) }, "",
			[]string{"node/persistence-cron low var/spool/cron/bob"}},
		{"linger no units", func(t *nodetest.Tree) { t.File("var/lib/systemd/linger/bob", "", 0o644) }, "",
			[]string{"node/persistence-user-service low var/lib/systemd/linger/bob"}},
		{"unit without linger", func(t *nodetest.Tree) {
			t.File("home/bob/.config/systemd/user/x.service", "[Service]\nExecStart=/dev/shm/x\n", 0o644)
		}, "", nil},
		{"devices no scheduler", func(t *nodetest.Tree) { t.File("dev/nvidia0", "", 0o666) }, "",
			[]string{"node/gpu-device-unfenced medium dev/nvidia0"}},
		{"devices 0660", func(t *nodetest.Tree) { t.File("dev/nvidia0", "", 0o660) }, "", nil},
		{"devices fenced", func(t *nodetest.Tree) {
			t.File("dev/nvidia0", "", 0o666)
			t.File("etc/slurm/cgroup.conf", "constraindevices = YES\n", 0o644)
		}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := nodetest.New(t.TempDir())
			tr.Proc(nodetest.Proc{PID: 1, Comm: "systemd", Exe: "/sbin/init", Argv: []string{"/sbin/init"}})
			tc.build(tr)
			fs, _ := node.Judge(audit(t, tr, tc.gpu))
			if got := keys(fs); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
				for _, f := range fs {
					t.Log(f.Message)
				}
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		cg   string
		want string
	}{
		{nodetest.SlurmV1, "slurm job 4242 step_0"},
		{nodetest.SlurmV2, "slurm job 4243 step_0"},
		{nodetest.SlurmSLUID, "slurm job s5K1KKYAYG5D00 step_extern"},
		{"0::/system.slice/slurmstepd.scope/job_7/step_interactive/user/task_0", "slurm job 7 step_interactive"},
		{nodetest.Slurmstepd, ""},
		{nodetest.PodSystemd, "pod 1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901 container 0123456789ab"},
		{nodetest.PodCgroupfs, "pod 1b2c3d4e-5f60-7182-93a4-b5c6d7e8f902 container fedcba987654"},
		{"0::/kubepods.slice/kubepods-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f903.slice/crio-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope", "pod 1b2c3d4e-5f60-7182-93a4-b5c6d7e8f903 container 0123456789ab"},
		{nodetest.System, ""},
		{"0::/user.slice/job_5", ""},
	} {
		var paths []string
		for _, l := range strings.Split(strings.TrimSpace(tc.cg), "\n") {
			_, p, _ := strings.Cut(l, "::")
			if p == "" {
				p = l[strings.LastIndexByte(l, ':')+1:]
			}
			paths = append(paths, p)
		}
		if got := node.Classify(paths).Name(); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.cg, got, tc.want)
		}
	}
}

// TestLimits: a limit reached is said, never silent.
func TestLimits(t *testing.T) {
	tr := nodetest.Clean(t.TempDir())
	tr.Close()
	a, err := node.Collect(context.Background(), tr.Dir, node.Options{NoNVML: true, Limits: node.Limits{MaxProcesses: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Processes) != 3 || len(a.Incomplete) == 0 {
		t.Errorf("%d processes, incomplete %v", len(a.Processes), a.Incomplete)
	}
}

// TestLinkOutOfRoot: a link that leads out of the root is read as a link
// and never followed.
func TestLinkOutOfRoot(t *testing.T) {
	tr := nodetest.New(t.TempDir())
	tr.Proc(nodetest.Proc{PID: 1, Comm: "systemd", Exe: "/sbin/init"})
	tr.Close()
	outside := t.TempDir()
	nodetest.New(outside).File("cron", "* * * * * root /tmp/evil\n", 0o644)
	if err := symlink(outside+"/cron", tr.Dir+"/etc/cron.d/x"); err != nil {
		t.Fatal(err)
	}
	a, err := node.Collect(context.Background(), tr.Dir, node.Options{NoNVML: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Cron) != 0 {
		t.Errorf("followed a link out of the root: %v", a.Cron)
	}
}
