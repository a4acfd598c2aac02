//go:build !mlwarden_sbatch

package misconfig

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

func newCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := NewCluster()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func clusterScan(t *testing.T, files map[string]string) []scanners.Finding {
	t.Helper()
	m := map[string][]byte{}
	for p, d := range files {
		m[p] = []byte(d)
	}
	return scannertest.Scan(t, m, newCluster(t))
}

func ruleHits(fs []scanners.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s:%d", f.RuleID, f.Path, f.Line))
	}
	return out
}

// Manifests of a tenant namespace, as a platform repository keeps them.
const (
	nsTeamA = `apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels: {team: a, pod-security.kubernetes.io/enforce: baseline}
`
	limitRange = `apiVersion: v1
kind: LimitRange
metadata: {name: limits, namespace: team-a}
spec:
  limits: [{type: Container, default: {cpu: "8", memory: 64Gi}}]
`
	denyAll = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: team-a}
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
`
	allowSome = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-web, namespace: team-a}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {}}]}]
`
	gpuQuotaYAML = `apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: team-a}
spec:
  hard:
    requests.nvidia.com/gpu: "8"
`
	cpuQuota = `apiVersion: v1
kind: ResourceQuota
metadata: {name: cpu, namespace: team-a}
spec:
  hard: {requests.cpu: "64"}
`
	gpuJob = `apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: team-a}
spec:
  template:
    spec:
      serviceAccountName: trainer
      restartPolicy: Never
      containers:
        - name: train
          image: registry.example/train@sha256:0000000000000000000000000000000000000000000000000000000000000000
          resources:
            limits: {nvidia.com/gpu: 1}
`
)

func doc(parts ...string) string { return strings.Join(parts, "---\n") }

// clusterCase is manifests and the findings (rule path:line) they must
// give, and rules that must not fire; a case with no want must give
// nothing.
type clusterCase struct {
	name  string
	files map[string]string
	want  []string
	not   []string
}

func TestClusterRules(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "namespace without default deny or GPU quota",
			files: map[string]string{"ns.yaml": doc(nsTeamA, allowSome, cpuQuota), "job.yaml": gpuJob},
			want:  []string{RuleGPUNamespaceNoDefaultDeny.ID + " job.yaml:2", RuleGPUNamespaceNoQuota.ID + " job.yaml:2"}},
		{name: "namespace with default deny and GPU quota (clean)",
			files: map[string]string{"ns.yaml": doc(nsTeamA, denyAll, allowSome, gpuQuotaYAML, limitRange), "job.yaml": gpuJob},
			not:   []string{RuleGPUNamespaceNoDefaultDeny.ID, RuleGPUNamespaceNoQuota.ID, RuleGPUNamespaceShared.ID}},
		{name: "a repository with only a training job (not judged)",
			files: map[string]string{"job.yaml": gpuJob},
			not:   []string{RuleGPUNamespaceNoDefaultDeny.ID, RuleGPUNamespaceNoQuota.ID}},
		{name: "a namespace without GPU workloads (clean)",
			files: map[string]string{"ns.yaml": nsTeamA},
			not:   []string{RuleGPUNamespaceNoDefaultDeny.ID, RuleGPUNamespaceNoQuota.ID}},
		{name: "kubectl List with the namespace's objects",
			files: map[string]string{"all.yaml": "apiVersion: v1\nkind: List\nitems:\n" + indentItems(nsTeamA, denyAll, gpuQuotaYAML, limitRange, gpuJob)},
			not:   []string{RuleGPUNamespaceNoDefaultDeny.ID, RuleGPUNamespaceNoQuota.ID}},
		{name: "service accounts of two teams",
			files: map[string]string{"ns.yaml": doc(nsTeamA, denyAll, gpuQuotaYAML,
				"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: trainer, namespace: team-a, labels: {team: a}}\n",
				"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: scorer, namespace: team-a, labels: {team: b}}\n"),
				"job.yaml": doc(gpuJob, strings.ReplaceAll(strings.ReplaceAll(gpuJob, "trainer", "scorer"), "name: train,", "name: score,"))},
			want: []string{RuleGPUNamespaceShared.ID + " job.yaml:2"}},
		{name: "service accounts of one team (clean)",
			files: map[string]string{"ns.yaml": doc(nsTeamA, denyAll, gpuQuotaYAML, limitRange,
				"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: trainer, namespace: team-a, labels: {team: a}}\n",
				"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: scorer, namespace: team-a, labels: {team: a}}\n"),
				"job.yaml": doc(gpuJob, strings.ReplaceAll(strings.ReplaceAll(gpuJob, "trainer", "scorer"), "name: train,", "name: score,"))},
			not: []string{RuleGPUNamespaceShared.ID}},
		{name: "RoleBinding to another namespace's service account",
			files: map[string]string{"ns.yaml": doc(nsTeamA, denyAll, gpuQuotaYAML,
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: edit, namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\nsubjects:\n  - {kind: ServiceAccount, name: ci, namespace: team-b}\n"),
				"job.yaml": gpuJob},
			want: []string{RuleGPUNamespaceShared.ID + " job.yaml:2"}},
		{name: "RoleBinding to the namespace's own service account (clean)",
			files: map[string]string{"ns.yaml": doc(nsTeamA, denyAll, gpuQuotaYAML, limitRange,
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: edit, namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\nsubjects:\n  - {kind: ServiceAccount, name: ci, namespace: team-a}\n"),
				"job.yaml": gpuJob},
			not: []string{RuleGPUNamespaceShared.ID}},
		{name: "GPU pod with host namespaces",
			files: map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostIPC: true\n  hostPID: true\n  containers:\n    - name: c\n      image: x\n      resources: {limits: {nvidia.com/gpu: 1}}\n"},
			want:  []string{RuleGPUHostNamespace.ID + " pod.yaml:5", RuleGPUHostNamespace.ID + " pod.yaml:6"}},
		{name: "pod with host namespaces and no GPU (clean)",
			files: map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostNetwork: true\n  containers:\n    - {name: c, image: x}\n"},
			not:   []string{RuleGPUHostNamespace.ID}},
		{name: "GPU pod with host paths",
			files: map[string]string{"dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: x\n          resources: {limits: {nvidia.com/mig-1g.10gb: 1}}\n      volumes:\n        - name: dev\n          hostPath: {path: /dev}\n        - name: sock\n          hostPath:\n            path: /run/containerd/containerd.sock\n        - name: nv\n          hostPath: {path: /run/nvidia/driver}\n        - name: data\n          hostPath: {path: /data}\n"},
			want:  []string{RuleGPUHostPath.ID + " dep.yaml:13", RuleGPUHostPath.ID + " dep.yaml:16", RuleGPUHostPath.ID + " dep.yaml:18"}},
		{name: "GPU pod with a data host path (clean)",
			files: map[string]string{"dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n      volumes:\n        - {name: data, hostPath: {path: /data}}\n"},
			not:   []string{RuleGPUHostPath.ID, RuleGPUHostNamespace.ID}},
		{name: "time-slicing with tenants of two teams",
			files: map[string]string{
				"ns.yaml":     doc(nsTeamA, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n  labels: {team: b}\n"),
				"plugin.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: time-slicing-config, namespace: gpu-operator}\ndata:\n  any: |-\n    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n        - name: nvidia.com/gpu\n          replicas: 4\n"},
			want: []string{RuleGPUTimeSlicingShared.ID + " plugin.yaml:8"}},
		{name: "time-slicing with an untrusted namespace",
			files: map[string]string{
				"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: guests\n  labels: {mlwarden.io/trust: untrusted}\n",
				"config.yaml": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - {name: nvidia.com/gpu, replicas: 10}\n"},
			want: []string{RuleGPUTimeSlicingShared.ID + " config.yaml:3"}},
		{name: "time-slicing in a one-team cluster (clean)",
			files: map[string]string{"ns.yaml": nsTeamA,
				"config.yaml": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - {name: nvidia.com/gpu, replicas: 10}\n"},
			not: []string{RuleGPUTimeSlicingShared.ID}},
		{name: "MIG strategy single with a mixed-strategy request",
			files: map[string]string{"values.yaml": "mig:\n  strategy: single\n", "job.yaml": strings.Replace(gpuJob, "nvidia.com/gpu: 1", "nvidia.com/mig-1g.10gb: 1", 1)},
			want:  []string{RuleMIGStrategyMismatch.ID + " job.yaml:2"}},
		{name: "MIG strategy mixed with a single-strategy product label",
			files: map[string]string{"clusterpolicy.yaml": "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\nspec:\n  mig:\n    strategy: mixed\n",
				"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-MIG-1g.5gb}\n  containers:\n    - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n"},
			want: []string{RuleMIGStrategyMismatch.ID + " pod.yaml:2"}},
		{name: "MIG strategy mixed with a mixed request (clean)",
			files: map[string]string{"values.yaml": "mig:\n  strategy: mixed\n", "job.yaml": strings.Replace(gpuJob, "nvidia.com/gpu: 1", "nvidia.com/mig-1g.10gb: 1", 1)},
			not:   []string{RuleMIGStrategyMismatch.ID, RuleMIGProfileUnknown.ID}},
		{name: "device plugin MIG_STRATEGY none with a MIG request",
			files: map[string]string{"ds.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: nvidia-device-plugin}\nspec:\n  template:\n    spec:\n      containers:\n        - name: plugin\n          image: nvcr.io/nvidia/k8s-device-plugin:v0.18.0\n          env:\n            - {name: MIG_STRATEGY, value: none}\n",
				"job.yaml": strings.Replace(gpuJob, "nvidia.com/gpu: 1", "nvidia.com/mig-3g.40gb: 1", 1)},
			want: []string{RuleMIGStrategyMismatch.ID + " job.yaml:2"}},
		{name: "MIG profile no GPU offers",
			files: map[string]string{"job.yaml": strings.Replace(gpuJob, "nvidia.com/gpu: 1", "nvidia.com/mig-3g.50gb: 1", 1)},
			want:  []string{RuleMIGProfileUnknown.ID + " job.yaml:13"}},
		{name: "MIG profile of another model than the selected product",
			files: map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}\n  containers:\n    - name: c\n      image: x\n      resources:\n        limits:\n          nvidia.com/mig-3g.40gb: 1\n"},
			want:  []string{RuleMIGProfileUnknown.ID + " pod.yaml:11"}},
		{name: "MIG profile of the selected product (clean)",
			files: map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n  containers:\n    - {name: c, image: x, resources: {limits: {nvidia.com/mig-3g.40gb: 1}}}\n"},
			not:   []string{RuleMIGProfileUnknown.ID}},
	})
}

func runClusterCases(t *testing.T, tests []clusterCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := clusterScan(t, tt.files)
			got := ruleHits(fs)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("want %s, got %v", w, got)
				}
			}
			for _, n := range tt.not {
				for _, f := range fs {
					if f.RuleID == n {
						t.Errorf("unexpected %s at %s:%d: %s", n, f.Path, f.Line, f.Message)
					}
				}
			}
			if len(tt.want) == 0 && len(fs) > 0 {
				t.Errorf("clean manifests gave %v", got)
			}
		})
	}
}

// indentItems writes documents as items of a kubectl List.
func indentItems(docs ...string) string {
	var b strings.Builder
	for _, d := range docs {
		for i, l := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
			if i == 0 {
				b.WriteString("  - " + l + "\n")
			} else {
				b.WriteString("    " + l + "\n")
			}
		}
	}
	return b.String()
}

func TestMIGLayouts(t *testing.T) {
	cfg := func(entries string) string {
		return "version: v1\nmig-configs:\n  custom:\n" + entries
	}
	tests := []struct {
		name    string
		entries string
		invalid bool
		msg     []string
	}{
		{"all-balanced on A100-40GB", "    - devices: all\n      device-filter: [\"0x20B010DE\", \"0x20B110DE\"]\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": 2, \"2g.10gb\": 1, \"3g.20gb\": 1}\n", false, nil},
		{"seven 1g on H100 (no filter)", "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 7}\n", false, nil},
		{"4g + 3g on A100-80GB", "    - device-filter: \"0x20B210DE\"\n      devices: [0, 1]\n      mig-enabled: true\n      mig-devices: {\"4g.40gb\": 1, \"3g.40gb\": 1}\n", false, nil},
		{"MIG disabled", "    - devices: all\n      mig-enabled: false\n", false, nil},
		{"unknown GPU in the filter (not judged)", "    - device-filter: \"0x1DB610DE\"\n      devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": 9}\n", false, nil},
		{"profile of another model", "    - device-filter: \"0x20B010DE\"\n      devices: all\n      mig-enabled: true\n      mig-devices: {\"3g.40gb\": 2}\n", true,
			[]string{"A100-40GB offers no 3g.40gb", "A layout that fits A100-40GB: 7g.40gb@0"}},
		{"too many compute slices", "    - device-filter: \"0x233010DE\"\n      devices: all\n      mig-enabled: true\n      mig-devices: {\"4g.40gb\": 1, \"3g.40gb\": 1, \"1g.10gb\": 1}\n", true,
			[]string{"8 compute slices, H100-80GB has 7", "A layout that fits H100-80GB: 4g.40gb@0 + 3g.40gb@4"}},
		{"more than the profile's count", "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.20gb\": 5}\n", true,
			[]string{"1g.20gb x5", "fits at most 4", "1g.20gb@0 + 1g.20gb@2 + 1g.20gb@4 + 1g.20gb@6"}},
		{"placement: 3g + 3g + 1g", "    - device-filter: [\"0x20B010DE\"]\n      devices: all\n      mig-enabled: true\n      mig-devices: {\"3g.20gb\": 2, \"1g.5gb\": 1}\n", true,
			[]string{"no placement", "3g.20gb@0 + 3g.20gb@4"}},
		{"placement: 1g.10gb x4 + 2g", "    - device-filter: [\"0x20B010DE\"]\n      devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 4, \"2g.10gb\": 1}\n", true,
			[]string{"no placement"}},
		{"profiles of no single model", "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": 1, \"1g.12gb\": 1}\n", true,
			[]string{"offers no"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := clusterScan(t, map[string]string{"mig-config.yaml": cfg(tt.entries)})
			if got := len(fs) > 0; got != tt.invalid {
				t.Fatalf("invalid %v, want %v: %v", got, tt.invalid, fs)
			}
			for _, f := range fs {
				if f.RuleID != RuleMIGLayoutInvalid.ID || f.Line != 4 {
					t.Errorf("finding %s at %d", f.RuleID, f.Line)
				}
				for _, m := range tt.msg {
					if !strings.Contains(f.Message, m) {
						t.Errorf("message lacks %q: %s", m, f.Message)
					}
				}
			}
		})
	}
	// The GPU Operator's ConfigMap: the config inside a data value, lines
	// of the file.
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: custom-mig-config, namespace: gpu-operator}\ndata:\n  config.yaml: |\n    version: v1\n    mig-configs:\n      all-3g.40gb:\n        - devices: all\n          device-filter: \"0x20B010DE\"\n          mig-enabled: true\n          mig-devices:\n            \"3g.40gb\": 2\n"
	fs := clusterScan(t, map[string]string{"cm.yaml": cm})
	if len(fs) != 1 || fs[0].Line != 9 || !strings.Contains(fs[0].Message, `"all-3g.40gb"`) {
		t.Fatalf("ConfigMap: %v", fs)
	}
}

func TestMIGFitSearch(t *testing.T) {
	c := newCluster(t)
	tab, err := c.table()
	if err != nil {
		t.Fatal(err)
	}
	var a100 = &tab.GPUs[0]
	if a100.Model != "A100-40GB" {
		t.Fatalf("first model %s", a100.Model)
	}
	// NVIDIA's valid A100 combinations (a sample): each fits.
	for _, counts := range []map[string]int{
		{"7g.40gb": 1}, {"4g.20gb": 1, "3g.20gb": 1}, {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}, {"3g.20gb": 2},
		{"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}, {"3g.20gb": 1, "1g.5gb": 3}, {"2g.10gb": 3, "1g.5gb": 1},
		{"2g.10gb": 2, "1g.5gb": 3}, {"1g.5gb": 7}, {"1g.10gb": 4}, {"1g.10gb": 3, "1g.5gb": 1}, {"1g.5gb+me": 1, "1g.5gb": 6},
	} {
		if _, why := migFit(a100, counts); why != "" {
			t.Errorf("%v: %s", counts, why)
		}
	}
	for _, counts := range []map[string]int{
		{"7g.40gb": 1, "1g.5gb": 1}, {"4g.20gb": 2}, {"1g.5gb": 8}, {"3g.20gb": 1, "4g.20gb": 1, "1g.5gb": 1}, {"1g.5gb+me": 2},
	} {
		if _, why := migFit(a100, counts); why == "" {
			t.Errorf("%v fits", counts)
		}
	}
}
