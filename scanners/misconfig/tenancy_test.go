//go:build !mlwarden_sbatch

package misconfig

import (
	"strings"
	"testing"
)

// Objects as the API server returns them (kubectl get -o yaml): defaults,
// status, namespace and creationTimestamp filled in.
const (
	nsLive = `apiVersion: v1
kind: Namespace
metadata:
  creationTimestamp: "2026-11-02T10:00:00Z"
  labels:
    kubernetes.io/metadata.name: team-a
    pod-security.kubernetes.io/enforce: baseline
    team: a
  name: team-a
  resourceVersion: "812"
  uid: 6f1e8f1c-0000-4000-8000-000000000001
spec:
  finalizers: [kubernetes]
status:
  phase: Active
`
	gpuTemplate = `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  creationTimestamp: "2026-11-02T10:00:00Z"
  name: one-gpu
  namespace: team-a
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          allocationMode: ExactCount
          count: 1
          deviceClassName: gpu.nvidia.com
`
	draPod = `apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: "2026-11-02T10:01:00Z"
  name: train-0
  namespace: team-a
spec:
  hostPID: true
  serviceAccountName: trainer
  containers:
  - name: train
    image: registry.example/train@sha256:0000000000000000000000000000000000000000000000000000000000000000
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
  restartPolicy: Never
status:
  phase: Running
  resourceClaimStatuses:
  - name: gpu
    resourceClaimName: train-0-gpu-x7k2p
`
	// The claim the API server generated from the template for the pod.
	generatedClaim = `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: train-0-gpu-x7k2p
  namespace: team-a
  ownerReferences:
  - {apiVersion: v1, kind: Pod, name: train-0, uid: 6f1e8f1c-0000-4000-8000-000000000002, controller: true}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {allocationMode: ExactCount, count: 1, deviceClassName: gpu.nvidia.com, adminAccess: true}
status:
  allocation:
    devices:
      results:
      - {adminAccess: true, device: gpu-0, driver: gpu.nvidia.com, pool: node-1, request: gpu}
`
	draQuota = `apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: team-a}
spec:
  hard:
    gpu.nvidia.com.deviceclass.resource.k8s.io/devices: "4"
`
	limitRangeA = `apiVersion: v1
kind: LimitRange
metadata: {name: limits, namespace: team-a}
spec:
  limits: [{type: Container, default: {cpu: "8", memory: 64Gi}}]
`
	denyAllA = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: team-a}
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
`
)

// sharedClaim is a named ResourceClaim whose GpuConfig time-slices its GPU.
func sharedClaim(strategy string) string {
	return `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-gpu, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
    config:
    - requests: [gpu]
      opaque:
        driver: gpu.nvidia.com
        parameters:
          apiVersion: resource.nvidia.com/v1beta1
          kind: GpuConfig
          sharing:
            strategy: ` + strategy + `
`
}

// claimUser is a Deployment whose pods use the ResourceClaim claim.
func claimUser(name, sa, claim string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: team-a}
spec:
  template:
    spec:
      serviceAccountName: ` + sa + `
      containers:
      - {name: c, image: x, resources: {claims: [{name: gpu}]}}
      resourceClaims:
      - {name: gpu, resourceClaimName: ` + claim + `}
`
}

func TestDRAClusterRules(t *testing.T) {
	tidy := []string{denyAllA, draQuota, limitRangeA}
	runClusterCases(t, []clusterCase{
		{name: "pod with a GPU claim template is a GPU pod (live shape)",
			files: map[string]string{"ns.yaml": doc(nsLive, gpuTemplate), "pod.yaml": draPod},
			want: []string{RuleGPUNamespaceNoDefaultDeny.ID + " pod.yaml:2", RuleGPUNamespaceNoQuota.ID + " pod.yaml:2",
				RuleGPUNamespaceNoLimitRange.ID + " pod.yaml:2", RuleGPUHostNamespace.ID + " pod.yaml:8"}},
		{name: "DRA quota, default deny and LimitRange (clean but for hostPID)",
			files: map[string]string{"ns.yaml": doc(append([]string{nsLive, gpuTemplate}, tidy...)...), "pod.yaml": draPod},
			want:  []string{RuleGPUHostNamespace.ID + " pod.yaml:8"},
			not:   []string{RuleGPUNamespaceNoQuota.ID, RuleGPUNamespaceNoDefaultDeny.ID, RuleGPUNamespaceNoLimitRange.ID}},
		{name: "claim of a device class that is no GPU (clean)",
			files: map[string]string{"ns.yaml": doc(nsLive, strings.Replace(gpuTemplate, "gpu.nvidia.com", "fpga.example.com", 1)), "pod.yaml": draPod}},
		{name: "claim template not in the target (not judged)",
			files: map[string]string{"ns.yaml": nsLive, "pod.yaml": draPod}},
		{name: "DeviceClass of the target whose CEL names the NVIDIA driver",
			files: map[string]string{"ns.yaml": doc(nsLive, strings.Replace(gpuTemplate, "gpu.nvidia.com", "big-gpu", 1),
				"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: big-gpu}\nspec:\n  selectors:\n  - cel:\n      expression: \"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName.contains('H100')\"\n"),
				"pod.yaml": draPod},
			want: []string{RuleGPUNamespaceNoQuota.ID + " pod.yaml:2", RuleGPUHostNamespace.ID + " pod.yaml:8"}},
		{name: "DeviceClass of another driver (clean)",
			files: map[string]string{"ns.yaml": doc(nsLive, strings.Replace(gpuTemplate, "gpu.nvidia.com", "nic", 1),
				"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: nic}\nspec:\n  selectors:\n  - cel: {expression: \"device.driver == \\\"sriov.example.com\\\"\"}\n"),
				"pod.yaml": draPod}},
		{name: "v1beta1 claim with deviceClassName, and firstAvailable",
			files: map[string]string{"ns.yaml": doc(nsLive, denyAllA, limitRangeA,
				"apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata: {name: mig, namespace: team-a}\nspec:\n  devices:\n    requests:\n    - {name: gpu, deviceClassName: mig.nvidia.com}\n",
				"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: any, namespace: team-a}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      firstAvailable:\n      - {name: small, deviceClassName: example.com/none}\n      - {name: vm, deviceClassName: vfio.gpu.nvidia.com}\n"),
				"a.yaml": claimUser("a", "trainer", "mig"), "b.yaml": claimUser("b", "trainer", "any")},
			want: []string{RuleGPUNamespaceNoQuota.ID + " a.yaml:2"}},
		{name: "adminAccess outside an admin namespace",
			files: map[string]string{"ns.yaml": nsLive, "claim.yaml": strings.Replace(gpuTemplate, "count: 1\n", "count: 1\n          adminAccess: true\n", 1)},
			want:  []string{RuleGPUClaimAdminAccess.ID + " claim.yaml:15"}},
		{name: "adminAccess in v1beta1 shape",
			files: map[string]string{"ns.yaml": nsLive, "claim.yaml": "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata: {name: dbg, namespace: team-a}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      deviceClassName: gpu.nvidia.com\n      adminAccess: true\n"},
			want:  []string{RuleGPUClaimAdminAccess.ID + " claim.yaml:9"}},
		{name: "adminAccess in the administrators' namespace (clean)",
			files: map[string]string{"ns.yaml": strings.Replace(nsLive, "    team: a\n", "    team: a\n    resource.kubernetes.io/admin-access: \"true\"\n", 1),
				"claim.yaml": strings.Replace(gpuTemplate, "count: 1\n", "count: 1\n          adminAccess: true\n", 1)}},
		{name: "adminAccess in a namespace the target does not hold (not judged)",
			files: map[string]string{"claim.yaml": strings.Replace(gpuTemplate, "count: 1\n", "count: 1\n          adminAccess: true\n", 1)}},
		{name: "a claim generated for a pod is judged at its template (clean)",
			files: map[string]string{"ns.yaml": nsLive, "claim.yaml": generatedClaim}},
		{name: "time-sliced claim used by two workloads",
			files: map[string]string{"ns.yaml": doc(append([]string{nsLive}, tidy...)...), "claim.yaml": sharedClaim("TimeSlicing"),
				"a.yaml": claimUser("a", "trainer", "shared-gpu"), "b.yaml": claimUser("b", "trainer", "shared-gpu")},
			want: []string{RuleGPUTimeSlicingShared.ID + " claim.yaml:17"}},
		{name: "MPS claim used by two service accounts of one workload kind",
			files: map[string]string{"ns.yaml": doc(append([]string{nsLive}, tidy...)...), "claim.yaml": sharedClaim("MPS"),
				"a.yaml": doc(claimUser("a", "trainer", "shared-gpu"), claimUser("b", "scorer", "shared-gpu"))},
			want: []string{RuleGPUTimeSlicingShared.ID + " claim.yaml:17"}},
		{name: "time-sliced claim used by one workload (clean)",
			files: map[string]string{"ns.yaml": doc(append([]string{nsLive}, tidy...)...), "claim.yaml": sharedClaim("TimeSlicing"),
				"a.yaml": claimUser("a", "trainer", "shared-gpu")}},
	})
}

func TestTenancyClusterRules(t *testing.T) {
	job := gpuJob
	tidy := doc(denyAll, gpuQuotaYAML, limitRange)
	nsBare := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels: {team: a}\n"
	binding := func(name, roleKind, role, subjects string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: " + name + ", namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: " + roleKind + ", name: " + role + "}\nsubjects:\n" + subjects
	}
	crb := func(role, subjects string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: " + role + "}\nsubjects:\n" + subjects
	}
	secretReader := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: secret-reader}\nrules:\n- {apiGroups: [\"\"], resources: [secrets], verbs: [get, list]}\n"
	everything := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: everything}\nrules:\n- {apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}\n"
	viewer := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: viewer}\nrules:\n- {apiGroups: [\"\"], resources: [pods], verbs: [get, list]}\n"
	operatorNS := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu-operator\n  labels: {pod-security.kubernetes.io/enforce: privileged}\n"
	validator := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nvidia-cuda-validator-9xk2d\n  namespace: gpu-operator\n  labels: {app: nvidia-cuda-validator}\nspec:\n  containers:\n  - {name: cuda-validation, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\nstatus: {phase: Succeeded}\n"
	runClusterCases(t, []clusterCase{
		{name: "GPU namespace without a Pod Security label",
			files: map[string]string{"ns.yaml": doc(nsBare, tidy), "job.yaml": job},
			want:  []string{RuleGPUNamespacePodSecurity.ID + " ns.yaml:2"}},
		{name: "GPU namespace enforcing privileged",
			files: map[string]string{"ns.yaml": doc(strings.Replace(nsTeamA, "baseline", "privileged", 1), tidy), "job.yaml": job},
			want:  []string{RuleGPUNamespacePodSecurity.ID + " ns.yaml:2"}},
		{name: "Pod Security label of a namespace the target does not hold (not judged)",
			files: map[string]string{"ns.yaml": tidy, "job.yaml": job}},
		{name: "namespace without GPU workloads and labels (clean)",
			files: map[string]string{"ns.yaml": nsBare}},
		{name: "no LimitRange",
			files: map[string]string{"ns.yaml": doc(nsTeamA, denyAll, gpuQuotaYAML), "job.yaml": job},
			want:  []string{RuleGPUNamespaceNoLimitRange.ID + " job.yaml:2"}},
		{name: "the GPU Operator's own pods (clean)",
			files: map[string]string{"ns.yaml": operatorNS, "pod.yaml": validator,
				"ds.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: nvidia-device-plugin-daemonset\n  namespace: gpu-operator\n  ownerReferences: [{apiVersion: nvidia.com/v1, kind: ClusterPolicy, name: cluster-policy, uid: u}]\nspec:\n  template:\n    spec:\n      containers: [{name: p, image: x}]\n"}},
		{name: "tenant job in the GPU Operator's namespace",
			files: map[string]string{"ns.yaml": operatorNS, "pod.yaml": validator, "job.yaml": strings.Replace(job, "namespace: team-a", "namespace: gpu-operator", 1)},
			want:  []string{RuleGPUNamespacePodSecurity.ID + " job.yaml:2"}},
		{name: "tenant pod in the namespace of the operator's Deployment",
			files: map[string]string{"op.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gpu-operator, namespace: nvidia-system, labels: {app: gpu-operator}}\nspec:\n  template:\n    spec:\n      containers: [{name: o, image: x}]\n",
				"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: notebook, namespace: nvidia-system}\nspec:\n  containers: [{name: c, image: x}]\n"},
			want: []string{RuleGPUNamespacePodSecurity.ID + " pod.yaml:2"}},
		{name: "GPU pods in kube-system (clean)",
			files: map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-system}\n", "job.yaml": strings.Replace(job, "namespace: team-a", "namespace: kube-system", 1)}},
		{name: "RoleBinding to another namespace's service account",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job,
				"rb.yaml": binding("ci", "ClusterRole", "viewer", "- {kind: ServiceAccount, name: ci, namespace: team-b}\n")},
			want: []string{RuleGPUNamespaceRBACCrossesTenants.ID + " rb.yaml:2", RuleGPUNamespaceShared.ID + " job.yaml:2"}},
		{name: "RoleBinding to every service account",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job,
				"rb.yaml": binding("all", "ClusterRole", "viewer", "- {kind: Group, name: system:serviceaccounts, apiGroup: rbac.authorization.k8s.io}\n")},
			want: []string{RuleGPUNamespaceRBACCrossesTenants.ID + " rb.yaml:2"}},
		{name: "RoleBinding to a wildcard ClusterRole of the target",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job, "roles.yaml": everything,
				"rb.yaml": binding("admin", "ClusterRole", "everything", "- {kind: ServiceAccount, name: trainer, namespace: team-a}\n")},
			want: []string{RuleGPUNamespaceRBACCrossesTenants.ID + " rb.yaml:2"}},
		{name: "RoleBinding to cluster-admin",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job,
				"rb.yaml": binding("admin", "ClusterRole", "cluster-admin", "- {kind: ServiceAccount, name: trainer, namespace: team-a}\n")},
			want: []string{RuleGPUNamespaceRBACCrossesTenants.ID + " rb.yaml:2"}},
		{name: "RoleBinding of the namespace's own account to a narrow role (clean)",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job, "roles.yaml": viewer,
				"rb.yaml": binding("view", "ClusterRole", "viewer", "- {kind: ServiceAccount, name: trainer, namespace: team-a}\n")}},
		{name: "ClusterRoleBinding gives a GPU tenant every Secret",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job, "roles.yaml": secretReader,
				"crb.yaml": crb("secret-reader", "- {kind: ServiceAccount, name: trainer, namespace: team-a}\n")},
			want: []string{RuleGPUNamespaceRBACCrossesTenants.ID + " crb.yaml:2"}},
		{name: "ClusterRoleBinding gives pods/exec to every authenticated user",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job,
				"roles.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: exec}\nrules:\n- {apiGroups: [\"\"], resources: [pods/exec], verbs: [create]}\n",
				"crb.yaml":   crb("exec", "- {kind: Group, name: system:authenticated, apiGroup: rbac.authorization.k8s.io}\n")},
			want: []string{RuleGPUNamespaceRBACCrossesTenants.ID + " crb.yaml:2"}},
		{name: "ClusterRoleBinding of Secrets to a platform service account (clean)",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job, "roles.yaml": secretReader,
				"crb.yaml": crb("secret-reader", "- {kind: ServiceAccount, name: prometheus, namespace: monitoring}\n")}},
		{name: "ClusterRoleBinding of a narrow role to a tenant (clean)",
			files: map[string]string{"ns.yaml": doc(nsTeamA, tidy), "job.yaml": job, "roles.yaml": viewer,
				"crb.yaml": crb("viewer", "- {kind: ServiceAccount, name: trainer, namespace: team-a}\n")}},
	})
}
