//go:build !mlwarden_sbatch

package misconfig

import (
	"bytes"
	"context"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// FuzzCluster feeds a file name and content to the cluster reading:
// Kubernetes objects, Lists, ConfigMaps with embedded configs, mig-parted
// layouts, device plugin configs. Findings must be the check's, at a line
// of the file (ConfigMap offsets included); nothing may panic.
func FuzzCluster(f *testing.F) {
	f.Add("ns.yaml", nsTeamA+"---\n"+gpuJob)
	f.Add("list.yaml", "kind: List\nitems:\n  - kind: Namespace\n    metadata: {name: a}\n  - kind: List\n    items: [{kind: Pod, spec: {hostPID: true, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}]\n")
	f.Add("mig.yaml", "version: v1\nmig-configs:\n  c:\n    - {devices: all, mig-enabled: true, mig-devices: {\"1g.5gb\": 99, \"7g.40gb\": -1}}\n")
	f.Add("cm.yaml", "kind: ConfigMap\ndata:\n  a: \"mig-configs:\\n  x:\\n  - {mig-enabled: true, mig-devices: {3g.40gb: 3}}\\n\"\n  b: |\n    sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}\n")
	f.Add("pod.json", `{"kind": "Pod", "spec": {"hostNetwork": true, "volumes": [{"name": "s", "hostPath": {"path": "/var/run"}}], "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-9g.1gb": "1"}}}]}}`)
	f.Add("a.yaml", "a: &x [*x]\nkind: *x\n")
	f.Add("s.yaml", "mig: {strategy: single}\nflags: {migStrategy: mixed}\n")
	f.Add("cm.yaml", "kind: ConfigMap\ndata:\n 00: \"mig-configs:\\n 00:\\n  - {mig-enabled: true, mig-devices: {0000000: 1}}#0\"")
	f.Add("dra.yaml", nsLive+"---\n"+gpuTemplate+"---\n"+draPod+"---\n"+generatedClaim+"---\n"+sharedClaim("MPS")+"---\n"+claimUser("a", "x", "shared-gpu"))
	f.Add("class.yaml", "kind: DeviceClass\nmetadata: {name: g}\nspec: {selectors: [{cel: {expression: \"'gpu.nvidia.com' == device.driver\"}}]}\n---\nkind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, firstAvailable: [{name: s, deviceClassName: g}], adminAccess: true}], config: [{opaque: {parameters: {sharing: {strategy: TimeSlicing}}}}]}}\n---\nkind: Pod\nspec: {hostIPC: true, resourceClaims: [{name: r, resourceClaimName: c}], containers: [{name: c}]}\n")
	f.Add("rbac.yaml", "kind: ClusterRole\nmetadata: {name: r}\nrules: [{resources: ['*'], verbs: ['*']}]\n---\nkind: ClusterRoleBinding\nroleRef: {kind: ClusterRole, name: r}\nsubjects: [{kind: Group, name: 'system:serviceaccounts:'}]\n---\nkind: RoleBinding\nmetadata: {namespace: gpu-operator}\nroleRef: {kind: Role, name: r}\nsubjects: [{kind: ServiceAccount, name: s, namespace: o}]\n---\nkind: LimitRange\n---\nkind: Job\nmetadata: {namespace: gpu-operator}\nspec: {template: {spec: {containers: [{resources: {limits: {nvidia.com/gpu: 1}}}]}}}\n")
	c, err := NewCluster()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path, content string) {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "fuzz", Path: path}
		fs, err := scanners.ScanBytes(context.Background(), c, a, []byte(content))
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		fin, err := c.FinishTarget(context.Background(), scanners.Target{Name: "fuzz"})
		if err != nil {
			t.Fatalf("finish: %v", err)
		}
		lines := bytes.Count([]byte(content), []byte("\n")) + 1
		rules := map[string]bool{RuleNotScanned.ID: true}
		for _, r := range c.Rules() {
			rules[r.ID] = true
		}
		for _, f := range append(fs, fin...) {
			if !rules[f.RuleID] || f.Message == "" || f.Line < 0 || f.Line > lines {
				t.Fatalf("finding %+v (of %d lines)", f, lines)
			}
		}
	})
}

// TestClusterConformance runs the checks every scanner passes on
// FuzzCluster's seeds and the demo fixtures.
func TestClusterConformance(t *testing.T) {
	var seeds []scannertest.Seed
	for _, in := range scannertest.FuzzInputs(t, "cluster_fuzz_test.go", "FuzzCluster") {
		path, _ := in[0].(string)
		content, _ := in[1].(string)
		seeds = append(seeds, scannertest.Seed{Path: path, Data: []byte(content)})
	}
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	scannertest.Conformance(t, newCluster(t), seeds...)
}
