//go:build !mlwarden_sbatch

package misconfig

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// hardenedNode is a GPU node's configuration done right: Slurm fences
// devices, cores and memory, adopts ssh logins into jobs, enforces
// limits; the driver keeps profiling to admins; the toolkit ignores
// NVIDIA_VISIBLE_DEVICES from unprivileged containers; the CDI spec is what
// nvidia-ctk cdi generate writes. It gives nothing.
func hardenedNode() map[string]string {
	return map[string]string{
		"etc/slurm/slurm.conf": `# slurm.conf of a GPU cluster
ClusterName=gpu
SlurmctldHost=ctl01
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
PrologFlags=Contain,X11
GresTypes=gpu
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageEnforce=associations,limits,qos,safe
AccountingStorageTRES=gres/gpu
Include /etc/slurm/nodes.conf
`,
		"etc/slurm/nodes.conf": `NodeName=gpu[01-04] CPUs=64 RealMemory=512000 \
    Gres=gpu:a100:8 State=UNKNOWN
PartitionName=gpu Nodes=gpu[01-04] Default=YES MaxTime=2-00:00:00 State=UP
`,
		"etc/slurm/cgroup.conf": `CgroupPlugin=autodetect
ConstrainCores=yes
ConstrainDevices=yes
ConstrainRAMSpace=yes
`,
		"etc/slurm/gres.conf": `AutoDetect=off
NodeName=gpu[01-04] Name=gpu Type=a100 File=/dev/nvidia[0-7]
`,
		"etc/pam.d/sshd": `#%PAM-1.0
auth       required     pam_sepermit.so
auth       substack     password-auth
account    required     pam_nologin.so
account    include      password-auth
account    required     pam_slurm_adopt.so action_adopt_failure=deny action_generic_failure=deny
password   include      password-auth
session    required     pam_selinux.so close
session    include      password-auth
`,
		"etc/pam.d/password-auth": `auth        required      pam_unix.so
account     required      pam_unix.so
session     optional      pam_keyinit.so revoke
session     required      pam_limits.so
session     required      pam_unix.so
`,
		"etc/modprobe.d/nvidia.conf": `# device files for group video only
options nvidia NVreg_DeviceFileMode=0660 NVreg_DeviceFileGID=44 NVreg_RestrictProfilingToAdminUsers=1
options nvidia_uvm uvm_perf_prefetch_enable=1
`,
		"proc/driver/nvidia/params": `ResmanDebugLevel: 4294967295
RmLogonRC: 1
ModifyDeviceFiles: 1
DeviceFileUID: 0
DeviceFileGID: 44
DeviceFileMode: 432
RmProfilingAdminOnly: 1
RegistryDwords: ""
`,
		"etc/nvidia-container-runtime/config.toml": `#accept-nvidia-visible-devices-as-volume-mounts = false
accept-nvidia-visible-devices-envvar-when-unprivileged = false
accept-nvidia-visible-devices-as-volume-mounts = true
disable-require = false

[nvidia-container-cli]
environment = []
ldconfig = "@/sbin/ldconfig"
load-kmods = true

[nvidia-container-runtime]
log-level = "info"
mode = "auto"
runtimes = ["docker-runc", "runc", "crun"]
`,
		"etc/cdi/nvidia.yaml": cdiSpec("", ""),
	}
}

// cdiSpec is an nvidia-ctk generated spec; extra is added to the
// top-level containerEdits' mounts, extraDev to device 0's deviceNodes.
func cdiSpec(extra, extraDev string) string {
	return `---
cdiVersion: 0.5.0
containerEdits:
  deviceNodes:
  - path: /dev/nvidia-modeset
  - path: /dev/nvidia-uvm
  - path: /dev/nvidia-uvm-tools
  - path: /dev/nvidiactl
  env:
  - NVIDIA_VISIBLE_DEVICES=void
  hooks:
  - args: [nvidia-cdi-hook, create-symlinks, --link, libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so]
    hookName: createContainer
    path: /usr/bin/nvidia-cdi-hook
  mounts:
  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15
    hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15
    options: [ro, nosuid, nodev, bind]
  - containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.15
    hostPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.15
    options: [ro, nosuid, nodev, bind]
  - containerPath: /usr/lib/x86_64-linux-gnu/libnvcuvid.so.570.86.15
    hostPath: /usr/lib/x86_64-linux-gnu/libnvcuvid.so.570.86.15
    options: [ro, nosuid, nodev, bind]
  - containerPath: /run/nvidia-persistenced/socket
    hostPath: /run/nvidia-persistenced/socket
    options: [ro, nosuid, nodev, bind, noexec]
  - containerPath: /lib/firmware/nvidia/570.86.15/gsp_ga10x.bin
    hostPath: /lib/firmware/nvidia/570.86.15/gsp_ga10x.bin
    options: [ro, nosuid, nodev, bind]
  - containerPath: /usr/bin/nvidia-smi
    hostPath: /usr/bin/nvidia-smi
    options: [ro, nosuid, nodev, bind]
  - containerPath: /usr/share/glvnd/egl_vendor.d/10_nvidia.json
    hostPath: /usr/share/glvnd/egl_vendor.d/10_nvidia.json
    options: [ro, nosuid, nodev, bind]
` + extra + `devices:
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
    - path: /dev/dri/card1
    - path: /dev/dri/renderD128
` + extraDev + `  name: "0"
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
  name: all
kind: nvidia.com/gpu
`
}

// nhit is a finding a node test expects: path, rule, severity, line.
type nhit struct {
	path, rule string
	sev        scanners.Severity
	line       int
}

func (h nhit) String() string { return fmt.Sprintf("%s:%d %s/%s", h.path, h.line, h.rule, h.sev) }

func scanNode(t *testing.T, files map[string]string) []nhit {
	t.Helper()
	in := map[string][]byte{}
	for p, c := range files {
		in[p] = []byte(c)
	}
	var out []nhit
	for _, f := range scannertest.Scan(t, in, NewNodeConfig()) {
		out = append(out, nhit{f.Path, strings.TrimPrefix(f.RuleID, "misconfig/"), f.Severity, f.Line})
		if !strings.Contains(f.Message, "Fix: ") && f.RuleID != RuleNotScanned.ID {
			t.Errorf("%s: message has no fix: %s", f.RuleID, f.Message)
		}
	}
	slices.SortFunc(out, func(a, b nhit) int {
		return cmp.Or(strings.Compare(a.path, b.path), cmp.Compare(a.line, b.line), strings.Compare(a.rule, b.rule))
	})
	return out
}

func TestNodeHardened(t *testing.T) {
	if got := scanNode(t, hardenedNode()); len(got) != 0 {
		t.Errorf("hardened node: %v, want nothing", got)
	}
}

func TestNodeRules(t *testing.T) {
	high, med, info := scanners.SeverityHigh, scanners.SeverityMedium, scanners.SeverityInfo
	const (
		slurm  = "etc/slurm/slurm.conf"
		nodes  = "etc/slurm/nodes.conf"
		cgroup = "etc/slurm/cgroup.conf"
		gres   = "etc/slurm/gres.conf"
		sshd   = "etc/pam.d/sshd"
		pwauth = "etc/pam.d/password-auth"
		mod    = "etc/modprobe.d/nvidia.conf"
		params = "proc/driver/nvidia/params"
		ctk    = "etc/nvidia-container-runtime/config.toml"
		cdi    = "etc/cdi/nvidia.yaml"
	)
	h := hardenedNode()
	edit := func(p, old, new string) map[string]string {
		if !strings.Contains(h[p], old) {
			t.Fatalf("%s has no %q", p, old)
		}
		return map[string]string{p: strings.Replace(h[p], old, new, 1)}
	}
	join := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			maps.Copy(out, m)
		}
		return out
	}
	del := func(ps ...string) map[string]string {
		out := map[string]string{}
		for _, p := range ps {
			out[p] = "\x00delete"
		}
		return out
	}
	noGPU := join(map[string]string{slurm: strings.NewReplacer("GresTypes=gpu\n", "", "AccountingStorageEnforce=associations,limits,qos,safe\n", "").Replace(h[slurm])},
		edit(nodes, "Gres=gpu:a100:8 ", ""))
	tests := []struct {
		name string
		set  map[string]string // path: new content ("\x00delete" removes it)
		only bool              // the set is the whole target
		want []nhit
	}{
		// slurm-devices-unconstrained
		{"ConstrainDevices=no", edit(cgroup, "ConstrainDevices=yes", "ConstrainDevices=no"), false,
			[]nhit{{cgroup, "slurm-devices-unconstrained", high, 3}}},
		{"ConstrainDevices commented out is unset", edit(cgroup, "ConstrainDevices=yes", "#ConstrainDevices=yes"), false,
			[]nhit{{cgroup, "slurm-devices-unconstrained", high, 0}}},
		{"constraindevices in lower case", edit(cgroup, "ConstrainDevices=yes", "constraindevices = YES"), false, nil},
		{"no cgroup.conf beside slurm.conf", del(cgroup), false, []nhit{{slurm, "slurm-devices-unconstrained", high, 0}}},
		{"CgroupPlugin=disabled", edit(cgroup, "CgroupPlugin=autodetect", "CgroupPlugin=disabled"), false,
			[]nhit{{cgroup, "slurm-devices-unconstrained", high, 1}}},
		{"no GPU GRES: no GPU rules", join(noGPU, edit(cgroup, "ConstrainDevices=yes", "ConstrainDevices=no"), del(gres)), false, nil},
		// slurm-task-cgroup-missing
		{"TaskPlugin without task/cgroup", edit(slurm, "TaskPlugin=task/cgroup,task/affinity", "TaskPlugin=task/affinity"), false,
			[]nhit{{slurm, "slurm-task-cgroup-missing", high, 5}}},
		{"TaskPlugin commented out", edit(slurm, "TaskPlugin=", "# TaskPlugin="), false, []nhit{{slurm, "slurm-task-cgroup-missing", high, 0}}},
		{"taskplugin in lower case", edit(slurm, "TaskPlugin=task/cgroup,task/affinity", "taskplugin=task/affinity"), false,
			[]nhit{{slurm, "slurm-task-cgroup-missing", high, 5}}},
		{"TaskPlugin set in an include wins", join(edit(slurm, "TaskPlugin=task/cgroup,task/affinity", "TaskPlugin=task/affinity"), edit(nodes, "PartitionName", "TaskPlugin=task/cgroup\nPartitionName")), false, nil},
		// slurm-proctrack-weak
		{"proctrack/linuxproc", edit(slurm, "ProctrackType=proctrack/cgroup", "ProctrackType=proctrack/linuxproc"), false,
			[]nhit{{slurm, "slurm-proctrack-weak", med, 4}}},
		{"proctrack/pgid in lower case", edit(slurm, "ProctrackType=proctrack/cgroup", "proctracktype=proctrack/pgid"), false,
			[]nhit{{slurm, "slurm-proctrack-weak", med, 4}}},
		{"ProctrackType unset is cgroup on Linux", edit(slurm, "ProctrackType=proctrack/cgroup\n", ""), false, nil},
		// slurm-ssh-outside-allocation
		{"PrologFlags without Contain", edit(slurm, "PrologFlags=Contain,X11", "PrologFlags=Alloc"), false,
			[]nhit{{slurm, "slurm-ssh-outside-allocation", high, 6}}},
		{"PrologFlags unset", edit(slurm, "PrologFlags=Contain,X11\n", ""), false, []nhit{{slurm, "slurm-ssh-outside-allocation", high, 0}}},
		{"PrologFlags=X11 implies Contain", edit(slurm, "PrologFlags=Contain,X11", "PrologFlags=x11"), false, nil},
		{"no pam_slurm_adopt on a Slurm node", edit(sshd, "account    required     pam_slurm_adopt.so action_adopt_failure=deny action_generic_failure=deny\n", ""), false,
			[]nhit{{sshd, "slurm-ssh-outside-allocation", high, 0}}},
		{"no pam_slurm_adopt, no Slurm: nothing", map[string]string{sshd: "account required pam_unix.so\nsession optional pam_systemd.so\n"}, true, nil},
		{"pam_slurm_adopt commented out", edit(sshd, "account    required     pam_slurm_adopt.so", "#account    required     pam_slurm_adopt.so"), false,
			[]nhit{{sshd, "slurm-ssh-outside-allocation", high, 0}}},
		{"action_adopt_failure unset", edit(sshd, "action_adopt_failure=deny ", ""), false, []nhit{{sshd, "slurm-ssh-outside-allocation", med, 6}}},
		{"action_adopt_failure=allow", edit(sshd, "action_adopt_failure=deny", "action_adopt_failure=allow"), false, []nhit{{sshd, "slurm-ssh-outside-allocation", med, 6}}},
		{"pam_systemd in an included session stack", edit(pwauth, "session     required      pam_limits.so\n", "session     required      pam_limits.so\n-session    optional      pam_systemd.so\n"), false,
			[]nhit{{pwauth, "slurm-ssh-outside-allocation", med, 5}}},
		{"pam_slurm_adopt in an @included file, continued line", join(edit(sshd, "account    required     pam_slurm_adopt.so action_adopt_failure=deny action_generic_failure=deny\n", "@include slurm-account\n"),
			map[string]string{"etc/pam.d/slurm-account": "account required \\\n  pam_slurm_adopt.so action_adopt_failure=deny\n"}), false, nil},
		{"pam include missing", join(edit(sshd, "account    required     pam_slurm_adopt.so action_adopt_failure=deny action_generic_failure=deny\n", ""), del(pwauth)), false,
			[]nhit{{sshd, "not-scanned", info, 5}}},
		// slurm-gres-unfenced
		{"gpu GRES without File and AutoDetect off", edit(gres, "File=/dev/nvidia[0-7]", "Count=8"), false,
			[]nhit{{gres, "slurm-gres-unfenced", high, 2}}},
		{"gpu GRES without File, AutoDetect=nvml", join(edit(gres, "File=/dev/nvidia[0-7]", "Count=8"), edit(gres, "AutoDetect=off", "AutoDetect=nvml")), false, nil},
		{"AutoDetect on the line", edit(gres, "File=/dev/nvidia[0-7]", "AutoDetect=nvml"), false, nil},
		{"gres.conf without gpu lines", map[string]string{gres: "AutoDetect=off\nNodeName=cpu01 Name=license Count=4\n"}, false,
			[]nhit{{gres, "slurm-gres-unfenced", high, 0}}},
		{"no gres.conf beside slurm.conf", del(gres), false, []nhit{{slurm, "slurm-gres-unfenced", med, 7}}},
		// slurm-accounting-unenforced
		{"AccountingStorageEnforce=associations", edit(slurm, "associations,limits,qos,safe", "associations"), false,
			[]nhit{{slurm, "slurm-accounting-unenforced", med, 11}}},
		{"AccountingStorageEnforce unset", edit(slurm, "AccountingStorageEnforce=associations,limits,qos,safe\n", ""), false,
			[]nhit{{slurm, "slurm-accounting-unenforced", med, 0}}},
		// slurm-gpu-sharing
		{"shard GRES on shared partitions", join(edit(slurm, "GresTypes=gpu", "GresTypes=gpu,shard"), edit(nodes, "Gres=gpu:a100:8", "Gres=gpu:a100:8,shard:32")), false,
			[]nhit{{nodes, "slurm-gpu-sharing", med, 2}}},
		{"mps in GresTypes only", edit(slurm, "GresTypes=gpu", "GresTypes=gpu,mps"), false, []nhit{{slurm, "slurm-gpu-sharing", med, 7}}},
		{"shard on a partition exclusive to a user", join(edit(slurm, "GresTypes=gpu", "GresTypes=gpu,shard"), edit(nodes, "State=UP", "State=UP ExclusiveUser=YES")), false, nil},
		{"shard with partition defaults exclusive", join(edit(slurm, "GresTypes=gpu", "GresTypes=gpu,shard"), edit(nodes, "PartitionName=gpu", "PartitionName=DEFAULT OverSubscribe=EXCLUSIVE\nPartitionName=gpu")), false, nil},
		// Include
		{"Include not found", del(nodes), false, []nhit{{slurm, "not-scanned", info, 13}}},
		{"Include relative to slurm.conf", join(edit(slurm, "Include /etc/slurm/nodes.conf", "include nodes.conf")), false, nil},
		{"Include of itself is bounded", edit(nodes, "PartitionName", "Include /etc/slurm/nodes.conf\nPartitionName"), false,
			[]nhit{{nodes, "not-scanned", info, 3}}},
		{"Include outside the target is not followed", edit(slurm, "Include /etc/slurm/nodes.conf", "Include ../../../../etc/passwd"), false,
			[]nhit{{slurm, "not-scanned", info, 13}}},
		// nvidia-profiling-unrestricted
		{"modprobe RestrictProfilingToAdminUsers=0", edit(mod, "NVreg_RestrictProfilingToAdminUsers=1", "NVreg_RestrictProfilingToAdminUsers=0"), false,
			[]nhit{{mod, "nvidia-profiling-unrestricted", med, 2}}},
		{"modprobe RegistryDwords continued", map[string]string{mod: "options nvidia \\\n  NVreg_RegistryDwords=\"PeerMappingOverride=1;RmProfilingAdminOnly=0\"\n"}, false,
			[]nhit{{mod, "nvidia-profiling-unrestricted", med, 1}}},
		{"modprobe commented and other module", map[string]string{mod: "#options nvidia NVreg_RestrictProfilingToAdminUsers=0\noptions nvidia_uvm NVreg_RestrictProfilingToAdminUsers=0\n"}, false, nil},
		{"modprobe by content outside modprobe.d", map[string]string{"node/nvidia-options.conf": "options nvidia-current NVreg_RestrictProfilingToAdminUsers=0\n"}, false,
			[]nhit{{"node/nvidia-options.conf", "nvidia-profiling-unrestricted", med, 1}}},
		{"params RmProfilingAdminOnly: 0", edit(params, "RmProfilingAdminOnly: 1", "RmProfilingAdminOnly: 0"), false,
			[]nhit{{params, "nvidia-profiling-unrestricted", med, 7}}},
		// container-toolkit-envvar-devices
		{"toolkit envvar true", edit(ctk, "unprivileged = false", "unprivileged = true"), false,
			[]nhit{{ctk, "container-toolkit-envvar-devices", high, 2}}},
		{"toolkit envvar at its default", edit(ctk, "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n", "#accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"), false,
			[]nhit{{ctk, "container-toolkit-envvar-devices", med, 0}}},
		{"toolkit config.toml by content", map[string]string{"deploy/toolkit.toml": "accept-nvidia-visible-devices-envvar-when-unprivileged = true\n[nvidia-container-cli]\n"}, false,
			[]nhit{{"deploy/toolkit.toml", "container-toolkit-envvar-devices", high, 1}}},
		{"other config.toml", map[string]string{"etc/containerd/config.toml": "version = 2\n[plugins]\n"}, false, nil},
		// cdi-host-mount
		{"CDI mounts the host root", map[string]string{cdi: cdiSpec("  - containerPath: /host\n    hostPath: /\n", "")}, false,
			[]nhit{{cdi, "cdi-host-mount", high, 38}}},
		{"CDI mounts the docker socket", map[string]string{cdi: cdiSpec("  - containerPath: /var/run/docker.sock\n    hostPath: /var/run/docker.sock\n", "")}, false,
			[]nhit{{cdi, "cdi-host-mount", high, 38}}},
		{"CDI mounts another host dir", map[string]string{cdi: cdiSpec("  - containerPath: /opt/tools\n    hostPath: /opt/tools/bin\n", "")}, false,
			[]nhit{{cdi, "cdi-host-mount", med, 38}}},
		{"CDI device /dev/mem", map[string]string{cdi: cdiSpec("", "    - path: /dev/mem\n")}, false,
			[]nhit{{cdi, "cdi-host-mount", high, 43}}},
		{"CDI device beyond the GPU", map[string]string{cdi: cdiSpec("", "    - path: /dev/infiniband/uverbs0\n")}, false,
			[]nhit{{cdi, "cdi-host-mount", med, 43}}},
		{"CDI JSON by content", map[string]string{"specs/fpga.json": `{"cdiVersion":"0.6.0","kind":"vendor.com/fpga","devices":[{"name":"0","containerEdits":{"mounts":[{"hostPath":"/etc","containerPath":"/etc"},{"hostPath":"/opt/fpga","containerPath":"/opt/fpga"}]}}]}`}, false,
			[]nhit{{"specs/fpga.json", "cdi-host-mount", high, 1}}},
		{"not a CDI spec under etc/cdi", map[string]string{"etc/cdi/readme.yaml": "mounts:\n- hostPath: /\n"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := hardenedNode()
			if tt.only {
				files = map[string]string{}
			}
			for p, c := range tt.set {
				if c == "\x00delete" {
					delete(files, p)
				} else {
					files[p] = c
				}
			}
			got := scanNode(t, files)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestNodeSlurmByContent recognises a slurm.conf by its keys, and judges
// it without a file system (an image's file): includes are noted.
func TestNodeSlurmByContent(t *testing.T) {
	conf := "ClusterName=c\nSlurmctldHost=h\nTaskPlugin=task/cgroup\nPrologFlags=contain\nInclude /etc/slurm/nodes.conf\n"
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "img", TargetKind: scanners.KindImage, Path: "/opt/cluster/a.conf"}
	n := NewNodeConfig()
	if !n.Wants(a, []byte(conf)) {
		t.Fatal("slurm.conf by content not wanted")
	}
	fs, err := scanners.ScanBytes(context.Background(), n, a, []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].RuleID != RuleNotScanned.ID || fs[0].Line != 5 || !strings.Contains(fs[0].Message, "not on local disk") {
		t.Errorf("got %v, want the include noted at line 5", fs)
	}
	for _, p := range []string{"README.md", "etc/ssh/sshd", "src/params", "app.conf", "x.toml", "k8s/deploy.yaml"} {
		if n.Wants(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: p}, []byte("name: x\n")) {
			t.Errorf("%s wanted", p)
		}
	}
}

// TestNodeStateReplay judges a target from state a cache kept, as a warm
// rescan does: the slurm.conf's facts come back through RestoreState.
func TestNodeStateReplay(t *testing.T) {
	n := NewNodeConfig()
	f := nodeFacts{Slurmish: true, Slurm: []slurmFact{{site: site{Path: "etc/slurm/slurm.conf"}, GPUPath: "etc/slurm/slurm.conf", GPULine: 3, GPUWhat: "GresTypes=gpu"}}}
	b := fmt.Appendf(nil, `{"slurmish":true,"slurm":[{"path":%q,"gpu_path":%q,"gpu_line":3,"gpu_what":"GresTypes=gpu"}]}`, f.Slurm[0].Path, f.Slurm[0].GPUPath)
	if err := n.RestoreState(context.Background(), "t", b); err != nil {
		t.Fatal(err)
	}
	got, err := n.FinishTarget(context.Background(), scanners.Target{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range got {
		ids = append(ids, x.RuleID)
	}
	if want := []string{RuleSlurmDevicesUnconstrained.ID, RuleSlurmGRESUnfenced.ID}; !slices.Equal(ids, want) {
		t.Errorf("got %v, want %v", ids, want)
	}
	if err := n.RestoreState(context.Background(), "t", []byte("{")); err == nil {
		t.Error("bad state accepted")
	}
}

func TestNodeConformance(t *testing.T) {
	var seeds []scannertest.Seed
	for p, c := range hardenedNode() {
		seeds = append(seeds, scannertest.Seed{Target: "node", Path: p, Data: []byte(c)})
	}
	for _, in := range scannertest.FuzzInputs(t, "nodeconf_test.go", "FuzzSlurmConf") {
		seeds = append(seeds, scannertest.Seed{Path: "etc/slurm/slurm.conf", Data: in[0].([]byte)})
	}
	for _, in := range scannertest.FuzzInputs(t, "nodeconf_test.go", "FuzzPAM") {
		seeds = append(seeds, scannertest.Seed{Path: "etc/pam.d/sshd", Data: in[0].([]byte)})
	}
	for _, in := range scannertest.FuzzInputs(t, "nodeconf_test.go", "FuzzModprobe") {
		seeds = append(seeds, scannertest.Seed{Path: "etc/modprobe.d/x.conf", Data: in[0].([]byte)})
	}
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	scannertest.Conformance(t, NewNodeConfig(), seeds...)
}

// FuzzSlurmConf reads a slurm.conf that includes itself and another copy,
// through a file system of the fuzzed bytes.
func FuzzSlurmConf(f *testing.F) {
	f.Add([]byte(hardenedNode()["etc/slurm/slurm.conf"]))
	f.Add([]byte("NodeName=a \\\n Gres=gpu:4,shard:8 \\\n\nInclude x.conf\nInclude /x.conf\ninclude \"slurm.conf\"\nKey = \"quoted # value\" K2=v\\#1 # c\n"))
	f.Add([]byte("PartitionName=DEFAULT OverSubscribe=EXCLUSIVE\nPartitionName=p ExclusiveUser=NO\nSelectType=select/linear\nGresTypes=mps\n\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := scannertest.MapFS(map[string][]byte{"etc/slurm/slurm.conf": data, "etc/slurm/x.conf": data, "x.conf": data})
		c := readSlurm(fsys, "etc/slurm/slurm.conf", data)
		if c.files > maxSlurmFiles || c.bytes > maxSlurmBytes+len(data) || len(c.notes) > maxNotes {
			t.Fatalf("bounds: %d files, %d bytes, %d notes", c.files, c.bytes, len(c.notes))
		}
		for _, l := range c.lines {
			for _, kv := range l {
				if kv.key == "" || kv.line < 1 {
					t.Fatalf("pair %+v", kv)
				}
			}
		}
		slurmGRES(c)
		sharedNodes(c)
	})
}

// FuzzPAM reads a PAM stack that includes itself.
func FuzzPAM(f *testing.F) {
	f.Add([]byte(hardenedNode()["etc/pam.d/sshd"]))
	f.Add([]byte("@include sshd\naccount [success=1 default=ignore] pam_slurm_adopt.so action_adopt_failure=allow \\\n  x=y\n-session optional /lib/security/pam_systemd.so\naccount include /etc/pam.d/sshd\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := scannertest.MapFS(map[string][]byte{"etc/pam.d/sshd": data})
		for _, typ := range []string{"account", "session"} {
			s := readPAMStack(fsys, "etc/pam.d/sshd", data, typ)
			if s.files > maxPAMFiles || len(s.notes) > maxNotes {
				t.Fatalf("bounds: %d files, %d notes", s.files, len(s.notes))
			}
			for _, e := range s.entries {
				if e.typ != typ || e.line < 1 {
					t.Fatalf("entry %+v", e)
				}
			}
		}
	})
}

// FuzzModprobe reads the bytes as modprobe.d options and as
// /proc/driver/nvidia/params.
func FuzzModprobe(f *testing.F) {
	f.Add([]byte(hardenedNode()["etc/modprobe.d/nvidia.conf"]))
	f.Add([]byte(hardenedNode()["proc/driver/nvidia/params"]))
	f.Add([]byte("options nvidia \\\n NVreg_RegistryDwords=\"RmProfilingAdminOnly=0x0;A=1\" NVreg_X=\"a b\"\n#options nvidia x=1\noptions \"unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		check := func(o modOption) {
			if o.line < 1 || o.line > lines {
				t.Fatalf("option %+v past %d lines", o, lines)
			}
			profilingOpen(o.key, o.value)
		}
		parseModprobe(data, check)
		parseParams(data, check)
	})
}

// TestSlurmLongContinuation: a key's line in a logical line of many
// physical lines is found quickly and right.
func TestSlurmLongContinuation(t *testing.T) {
	var b strings.Builder
	const n = 200000
	for i := range n {
		fmt.Fprintf(&b, "K%d=v \\\n", i)
	}
	b.WriteString("\\\n\\\nLast=x\n")
	var got slurmLine
	parseSlurm([]byte(b.String()), "f", func(l slurmLine) { got = l }, func(string, int) {})
	if len(got) != n+1 || got[0].line != 1 || got[n-1].line != n || got[n].key != "Last" || got[n].line != n+3 {
		t.Fatalf("%d pairs, first at %d, last %+v", len(got), got[0].line, got[len(got)-1])
	}
}
