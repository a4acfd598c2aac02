//go:build !mlwarden_sbatch

package misconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
)

// Namespace-level rules of multi-tenant GPU isolation, judged once a
// target's manifests are all read.
var (
	RuleGPUNamespaceNoDefaultDeny = scanners.Rule{
		ID: "misconfig/gpu-namespace-no-default-deny", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "Namespace runs GPU workloads without a default-deny NetworkPolicy",
		Why:   "Without a NetworkPolicy that selects every pod and allows no ingress, any pod of any tenant reaches the namespace's notebooks, Ray dashboards and inference servers, which mostly have no authentication.",
		Fix:   "Add a NetworkPolicy with podSelector: {} and policyTypes [Ingress, Egress] and no rules to the namespace, then allow what each workload needs.",
	}
	RuleGPUNamespaceNoQuota = scanners.Rule{
		ID: "misconfig/gpu-namespace-no-quota", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "Namespace runs GPU workloads without a GPU ResourceQuota",
		Why:   "Without a ResourceQuota on requests.nvidia.com/gpu one tenant can take every GPU of the cluster.",
		Fix:   "Add a ResourceQuota with hard: {requests.nvidia.com/gpu: N} (and the nvidia.com/mig-* resources in use) to the namespace.",
	}
	RuleGPUNamespaceShared = scanners.Rule{
		ID: "misconfig/gpu-namespace-shared", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "GPU namespace shared by several teams' service accounts",
		Why:   "A namespace is Kubernetes' isolation boundary: quotas, NetworkPolicies, Secrets and RBAC apply to all of it, so teams that share one see each other's Secrets and workloads.",
		Fix:   "Give each team its own namespace with its own service accounts, quota and NetworkPolicy.",
	}
	RuleGPUTimeSlicingShared = scanners.Rule{
		ID: "misconfig/gpu-time-slicing-shared", Check: scanners.CheckMisconfig, Severity: scanners.SeverityInfo,
		Title: "GPU time-slicing where untrusted tenants share nodes",
		Why:   "NVIDIA: time-sliced replicas get no memory or fault isolation: every workload on a GPU has access to its memory and runs in the same fault domain. MIG isolates memory and faults in hardware.",
		Fix:   "Use MIG (mig.strategy mixed and a mig-parted layout) for GPUs shared between untrusted tenants, or give them separate nodes.",
	}
	RuleMIGStrategyMismatch = scanners.Rule{
		ID: "misconfig/mig-strategy-mismatch", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "Requested GPU resources do not match the device plugin's MIG strategy",
		Why:   "With mig.strategy single MIG devices are advertised as nvidia.com/gpu and products get a -MIG- suffix; with mixed they are nvidia.com/mig-<profile>. A request for the other naming never schedules.",
		Fix:   "Request nvidia.com/mig-<profile> with mig.strategy mixed, nvidia.com/gpu with single, or change the strategy.",
	}
)

// Cluster is the misconfig check's reading of Kubernetes manifests as a
// whole (a directory of YAML, Helm or Kustomize output): the pod rules of
// GPU isolation and MIG requests per file, and per namespace at the end of
// the target the NetworkPolicy, quota and sharing rules, time-slicing
// between tenants and MIG strategy mismatches. It also validates
// mig-parted layouts. It is safe for concurrent use. The sbatch hook's
// build (tag mlwarden_sbatch) leaves it out, and with it the Kubernetes API
// types (scanners/catalog/sbatch.go).
type Cluster struct {
	// mig is the MIG table; the built-in one is read at the first Scan
	// (the per-job sbatch hook builds this check and reads no manifest).
	mig     *rules.MIGTable
	migOnce sync.Once
	migErr  error

	mu      sync.Mutex
	targets map[string]*clusterState
}

// ClusterOption configures the cluster reading.
type ClusterOption func(*Cluster)

// WithMIGTable uses t instead of the built-in MIG table.
func WithMIGTable(t *rules.MIGTable) ClusterOption { return func(c *Cluster) { c.mig = t } }

// NewCluster returns the cluster reading of the misconfig check.
func NewCluster(opts ...ClusterOption) (*Cluster, error) {
	c := &Cluster{targets: map[string]*clusterState{}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// table returns the MIG table, reading the built-in one once.
func (c *Cluster) table() (*rules.MIGTable, error) {
	c.migOnce.Do(func() {
		if c.mig == nil {
			c.mig, c.migErr = rules.DefaultMIG()
		}
	})
	return c.mig, c.migErr
}

// Check implements scanners.Scanner.
func (c *Cluster) Check() string { return scanners.CheckMisconfig }

// Rules implements scanners.Scanner.
func (c *Cluster) Rules() []scanners.Rule {
	return []scanners.Rule{RuleGPUHostNamespace, RuleGPUHostPath, RuleGPUNamespaceNoDefaultDeny, RuleGPUNamespaceNoQuota,
		RuleGPUNamespaceShared, RuleGPUTimeSlicingShared, RuleMIGStrategyMismatch, RuleMIGLayoutInvalid, RuleMIGProfileUnknown,
		RuleGPUClaimAdminAccess, RuleGPUNamespacePodSecurity, RuleGPUNamespaceNoLimitRange, RuleGPUNamespaceRBACCrossesTenants, RuleNotScanned}
}

// Wants implements scanners.Scanner: YAML and JSON files.
func (c *Cluster) Wants(a *scanners.Artifact, head []byte) bool {
	if a.Kind != scanners.ArtifactFile {
		return false
	}
	ext := path.Ext(scanners.Base(a.Path))
	return ext == ".yaml" || ext == ".yml" || ext == ".json" && bytes.Contains(head, []byte(`"kind"`))
}

// Bounds: one file, and what is kept per target until its end.
const (
	maxClusterFile    = 16 << 20
	maxClusterObjects = 100000
)

// Scan reads the manifests of one file: pod rules and MIG layouts are
// judged here; what needs the whole target is kept for FinishTarget.
func (c *Cluster) Scan(ctx context.Context, a *scanners.Artifact, content scanners.Content) ([]scanners.Finding, error) {
	data, truncated, err := scanners.ReadAll(content, maxClusterFile)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if !bytes.Contains(data, []byte("kind")) && !bytes.Contains(data, []byte("mig-configs")) && !bytes.Contains(data, []byte("sharing")) &&
		!bytes.Contains(data, []byte("strategy")) {
		return nil, nil
	}
	if _, err := c.table(); err != nil {
		return nil, fmt.Errorf("misconfig check: %w", err)
	}
	r := &clusterRun{c: c, a: a, facts: &clusterState{}}
	r.stream(data, 0)
	if truncated {
		r.out = append(r.out, scanners.At(a, RuleNotScanned, 0,
			fmt.Sprintf("only the first %d bytes of this %d-byte manifest were checked for GPU isolation and MIG layouts", maxClusterFile, content.Size())))
	}
	if !r.facts.empty() {
		c.mu.Lock()
		st := c.targets[a.Target]
		if st == nil {
			st = &clusterState{}
			c.targets[a.Target] = st
		}
		merged := st.merge(r.facts)
		if !merged && !st.full {
			st.full = true
			r.out = append(r.out, scanners.At(a, RuleNotScanned, 0, fmt.Sprintf(
				"the target has more than %d Kubernetes objects: those after this file were not judged for namespace isolation", maxClusterObjects)))
		}
		c.mu.Unlock()
		if merged {
			keepFacts(ctx, r.facts) // for a cache that replays this file's findings
		}
	}
	return r.out, nil
}

// clusterRun reads one file.
type clusterRun struct {
	c     *Cluster
	a     *scanners.Artifact
	facts *clusterState
	out   []scanners.Finding
}

func (r *clusterRun) add(rule scanners.Rule, line int, evidence, msg string) {
	f := scanners.At(r.a, rule, line, msg)
	f.Evidence = clip(evidence, 120)
	r.out = append(r.out, f)
}

// stream reads a YAML stream; offset is added to its lines (a document
// embedded in a ConfigMap).
func (r *clusterRun) stream(data []byte, offset int) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for range maxYAMLDocs {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if err != io.EOF {
				return // YAML we cannot read (a Helm template): other rules read it as text
			}
			return
		}
		if len(doc.Content) == 1 {
			r.object(doc.Content[0], offset, 0)
		}
	}
}

// object reads one top-level YAML mapping.
func (r *clusterRun) object(n *yaml.Node, offset, depth int) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode || depth > 2 {
		return
	}
	if mc := get(n, "mig-configs"); mc != nil {
		r.migParted(mc, offset)
	}
	r.strategies(n, offset)
	if sh := get(n, "sharing"); sh != nil {
		r.timeSlicing(sh, offset)
	}
	kind := scalarOf(get(n, "kind"))
	if kind == "" {
		return
	}
	line := n.Line + offset
	if k := get(n, "kind"); k != nil {
		line = k.Line + offset
	}
	switch kind {
	case "List":
		if items := get(n, "items"); items != nil && items.Kind == yaml.SequenceNode {
			for _, it := range items.Content {
				r.object(it, offset, depth+1)
			}
		}
	case "ConfigMap":
		r.configMap(n, offset)
	case "Namespace":
		var o corev1.Namespace
		if decodeNode(n, &o) {
			r.facts.addNamespace(o.Name, o.Labels)
			r.facts.addNamespaceSite(o.Name, r.place(line))
		}
	case "LimitRange":
		var o corev1.LimitRange
		if decodeNode(n, &o) {
			r.facts.addLimitRange(o.Namespace)
		}
	case "DeviceClass":
		r.facts.addClass(scalarOf(get(get(n, "metadata"), "name")), selectsNVIDIA(n))
	case "ResourceClaim", "ResourceClaimTemplate":
		r.draClaim(kind, n, offset, line)
	case "Role", "ClusterRole":
		var o rbacv1.ClusterRole // a Role's fields are a subset
		if decodeNode(n, &o) {
			key := "ClusterRole/" + o.Name
			if kind == "Role" {
				key = "Role/" + o.Namespace + "/" + o.Name
			}
			r.facts.addRole(key, judgeRules(o.Rules))
		}
	case "ClusterRoleBinding":
		var o rbacv1.ClusterRoleBinding
		if decodeNode(n, &o) {
			r.facts.addBinding(bindingFact{Cluster: true, Name: o.Name, RoleRef: o.RoleRef, Subjects: o.Subjects, place: r.place(line)})
		}
	case "NetworkPolicy":
		var o networkingv1.NetworkPolicy
		if decodeNode(n, &o) {
			r.facts.addNetpol(o.Namespace, defaultDeny(&o))
		}
	case "ResourceQuota":
		var o corev1.ResourceQuota
		if decodeNode(n, &o) {
			r.facts.addQuota(o.Namespace, gpuQuota(o.Spec.Hard))
			r.facts.addQuotaClasses(o.Namespace, quotaClasses(o.Spec.Hard))
		}
	case "RoleBinding":
		var o rbacv1.RoleBinding
		if decodeNode(n, &o) {
			for _, s := range o.Subjects {
				if s.Kind == rbacv1.ServiceAccountKind && s.Namespace != "" && s.Namespace != o.Namespace {
					r.facts.addForeign(o.Namespace, s.Namespace+"/"+s.Name, r.a.Path, line)
				}
			}
			r.facts.manage(o.Namespace)
			r.facts.addBinding(bindingFact{Namespace: o.Namespace, Name: o.Name, RoleRef: o.RoleRef, Subjects: o.Subjects, place: r.place(line)})
		}
	case "ServiceAccount":
		var o corev1.ServiceAccount
		if decodeNode(n, &o) {
			r.facts.addSA(o.Namespace, o.Name, teamOf(o.Labels))
		}
	default:
		meta, spec, ok := podSpec(kind, n)
		if ok {
			r.workload(kind, meta, spec, n, offset, line)
		}
	}
}

// decodeNode decodes a YAML node into a Kubernetes API type through JSON,
// as kubectl reads YAML.
func decodeNode(n *yaml.Node, into any) bool {
	var v any
	if n.Decode(&v) != nil {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false // keys that are not strings
	}
	return json.Unmarshal(b, into) == nil
}

func scalarOf(n *yaml.Node) string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return strings.TrimSpace(n.Value)
}

// podSpec decodes the pod template of a workload kind.
func podSpec(kind string, n *yaml.Node) (metaOf, *corev1.PodSpec, bool) {
	var (
		meta *metav1.ObjectMeta
		tmpl *corev1.PodTemplateSpec
		spec *corev1.PodSpec
		ok   bool
	)
	switch kind {
	case "Pod":
		var o corev1.Pod
		ok, meta, spec = decodeNode(n, &o), &o.ObjectMeta, &o.Spec
	case "Deployment":
		var o appsv1.Deployment
		ok, meta, tmpl = decodeNode(n, &o), &o.ObjectMeta, &o.Spec.Template
	case "StatefulSet":
		var o appsv1.StatefulSet
		ok, meta, tmpl = decodeNode(n, &o), &o.ObjectMeta, &o.Spec.Template
	case "DaemonSet":
		var o appsv1.DaemonSet
		ok, meta, tmpl = decodeNode(n, &o), &o.ObjectMeta, &o.Spec.Template
	case "ReplicaSet":
		var o appsv1.ReplicaSet
		ok, meta, tmpl = decodeNode(n, &o), &o.ObjectMeta, &o.Spec.Template
	case "Job":
		var o batchv1.Job
		ok, meta, tmpl = decodeNode(n, &o), &o.ObjectMeta, &o.Spec.Template
	case "CronJob":
		var o batchv1.CronJob
		ok, meta, tmpl = decodeNode(n, &o), &o.ObjectMeta, &o.Spec.JobTemplate.Spec.Template
	default:
		return metaOf{}, nil, false
	}
	var template map[string]string
	if tmpl != nil {
		spec, template = &tmpl.Spec, tmpl.Labels
	}
	return metaOf{meta.Namespace, meta.Name, spec.NodeSelector, operatorOwn(*meta, template), operatorDeployment(kind, *meta)}, spec, ok
}

// metaOf is what the namespace judgement needs of a workload.
type metaOf struct {
	namespace, name string
	nodeSelector    map[string]string
	own, operator   bool // the GPU Operator's own workload; the operator itself
}

// fieldLine finds the line of key (with the given scalar value, when not
// empty) under n; def when there is none.
func fieldLine(n *yaml.Node, key, value string, def int) int {
	var found int
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		n = resolve(n)
		if n == nil || depth > maxYAMLDepth || found != 0 {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key && (value == "" || scalarOf(n.Content[i+1]) == value) {
					found = n.Content[i].Line
					return
				}
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	if found == 0 {
		return def
	}
	return found
}

// workload judges a pod template and keeps what the namespace needs.
func (r *clusterRun) workload(kind string, m metaOf, spec *corev1.PodSpec, n *yaml.Node, offset, line int) {
	gpus := GPUResources(spec)
	claims := podClaims(spec)
	who := kind + " " + m.name
	// A pod whose GPUs come from DRA claims is judged once the target's
	// claims and device classes are known (FinishTarget).
	var pending []pendingProblem
	problems := GPUPodIsolation(spec)
	if len(gpus) == 0 && len(claims) > 0 {
		problems = GPUPodIsolationAs(spec, []string{"DRA resource claims (" + strings.Join(DRAClaims(spec), ", ") + ")"})
	}
	for _, p := range problems {
		key, val := p.Field, ""
		if strings.HasPrefix(key, "hostPath ") {
			key, val = "path", strings.TrimPrefix(key, "hostPath ")
		} else {
			key, _, _ = strings.Cut(key, ":")
		}
		at := fieldLine(n, key, val, line-offset) + offset
		if len(gpus) == 0 {
			pending = append(pending, pendingProblem{Rule: p.Rule.ID, Line: at, Evidence: p.Field, Message: who + ": " + p.Message})
			continue
		}
		r.add(p.Rule, at, p.Field, who+": "+p.Message)
	}
	if m.operator {
		r.facts.addOperator(m.namespace)
	}
	product := m.nodeSelector["nvidia.com/gpu.product"]
	for _, g := range gpus {
		if _, ok := migResourceProfile(g); !ok {
			continue
		}
		if msg := judgeMIGRequest(r.c.mig, g, product); msg != "" {
			r.add(RuleMIGProfileUnknown, fieldLine(n, g, "", line-offset)+offset, g, who+": "+msg+". Fix: "+RuleMIGProfileUnknown.Fix)
		}
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = spec.DeprecatedServiceAccount
	}
	if sa == "" {
		sa = "default"
	}
	r.facts.addWorkload(workloadFact{namespace: m.namespace, who: who, path: r.a.Path, line: line, layer: r.a.Layer,
		commit: r.a.Commit, sa: sa, gpus: gpus, product: product, note: r.a.Note, claims: claims, pending: pending, own: m.own})
}

// defaultDeny reports whether a NetworkPolicy denies all ingress to every
// pod of its namespace: an empty pod selector, Ingress among its types
// (or no types and no egress rules), and no ingress rule.
func defaultDeny(p *networkingv1.NetworkPolicy) bool {
	if len(p.Spec.PodSelector.MatchLabels) > 0 || len(p.Spec.PodSelector.MatchExpressions) > 0 || len(p.Spec.Ingress) > 0 {
		return false
	}
	if len(p.Spec.PolicyTypes) == 0 {
		return true // Ingress is implied
	}
	return slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

// gpuQuota reports whether a quota bounds GPUs.
func gpuQuota(hard corev1.ResourceList) bool {
	for n := range hard {
		s := string(n)
		if s == "requests.nvidia.com/gpu" || s == "nvidia.com/gpu" || strings.HasPrefix(s, "requests.nvidia.com/mig-") || s == "requests.nvidia.com/gpu.shared" {
			return true
		}
	}
	return false
}

// teamLabels are the labels that name a tenant, in the order they are read.
var teamLabels = []string{"team", "tenant", "owner", "mlwarden.io/tenant"}

func teamOf(labels map[string]string) string {
	for _, k := range teamLabels {
		if v := labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// untrusted reports whether a namespace's labels say its tenant is not
// trusted.
func untrusted(labels map[string]string) bool {
	return labels["mlwarden.io/trust"] == "untrusted" || labels["tenant-trust"] == "untrusted"
}

// configMap reads the documents inside a ConfigMap's data: a mig-parted
// config (the GPU Operator's mig-configs / default-mig-parted-config) or a
// device plugin config with time-slicing.
func (r *clusterRun) configMap(n *yaml.Node, offset int) {
	data := get(n, "data")
	if data == nil || data.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(data.Content); i += 2 {
		v := resolve(data.Content[i+1])
		if v == nil || v.Kind != yaml.ScalarNode {
			continue
		}
		if !strings.Contains(v.Value, "mig-configs") && !strings.Contains(v.Value, "sharing") && !strings.Contains(v.Value, "migStrategy") {
			continue
		}
		// A block scalar's text starts on the line after its indicator
		// (its node's line); a flow scalar's on the node's line.
		inner := v.Line + offset - 1
		if v.Style == yaml.LiteralStyle || v.Style == yaml.FoldedStyle {
			inner = v.Line + offset
		}
		if v.Style == yaml.LiteralStyle || v.Style == yaml.FoldedStyle {
			r.stream([]byte(v.Value), inner)
			continue
		}
		// A quoted or plain scalar's lines are not the file's ("\n"
		// escapes): what it holds is reported at the scalar's line.
		sub := &clusterRun{c: r.c, a: r.a, facts: &clusterState{}}
		sub.stream([]byte(v.Value), inner)
		sub.flatten(v.Line + offset)
		r.out = append(r.out, sub.out...)
		r.facts.merge(sub.facts)
	}
}

// flatten puts every finding and fact of the run at line.
func (r *clusterRun) flatten(line int) {
	for i := range r.out {
		r.out[i].Line = line
	}
	f := r.facts
	for i := range f.slicing {
		f.slicing[i].line = line
	}
	for i := range f.strategy {
		f.strategy[i].line = line
	}
	for i := range f.workloads {
		f.workloads[i].line = line
		for j := range f.workloads[i].pending {
			f.workloads[i].pending[j].Line = line
		}
	}
	for k, v := range f.foreign {
		for i := range v {
			v[i].line = line
		}
		f.foreign[k] = v
	}
	for i := range f.t.Admin {
		f.t.Admin[i].Line = line
	}
	for i := range f.t.Bindings {
		f.t.Bindings[i].Line = line
	}
	for k, c := range f.t.Claims {
		c.Line = line
		for i := range c.Sharing {
			c.Sharing[i].Line = line
		}
		f.t.Claims[k] = c
	}
	for k, p := range f.t.NSSite {
		p.Line = line
		f.t.NSSite[k] = p
	}
}

// migParted validates each entry of a mig-parted mig-configs map.
func (r *clusterRun) migParted(mc *yaml.Node, offset int) {
	if mc.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(mc.Content); i += 2 {
		name := mc.Content[i].Value
		entries := resolve(mc.Content[i+1])
		if entries == nil || entries.Kind != yaml.SequenceNode {
			continue
		}
		for j, en := range entries.Content {
			en = resolve(en)
			e := migEntry{config: name, index: j + 1, line: en.Line + offset, counts: map[string]int{}}
			e.enabled = scalarOf(get(en, "mig-enabled")) == "true"
			switch f := get(en, "device-filter"); {
			case f == nil:
			case f.Kind == yaml.ScalarNode:
				e.filters = []string{f.Value}
			case f.Kind == yaml.SequenceNode:
				for _, x := range f.Content {
					e.filters = append(e.filters, scalarOf(x))
				}
			}
			if md := get(en, "mig-devices"); md != nil && md.Kind == yaml.MappingNode {
				for k := 0; k+1 < len(md.Content); k += 2 {
					var cnt int
					if resolve(md.Content[k+1]).Decode(&cnt) != nil {
						cnt = -1
					}
					e.counts[md.Content[k].Value] = cnt
				}
			}
			if msg := judgeMIGEntry(r.c.mig, e); msg != "" {
				r.add(RuleMIGLayoutInvalid, e.line, "mig-configs "+name, msg+". Fix: "+RuleMIGLayoutInvalid.Fix)
			}
		}
	}
}

// strategies records MIG strategies: Helm values and ClusterPolicy
// (mig.strategy), a device plugin config (flags.migStrategy), and the
// device plugin's MIG_STRATEGY variable or --mig-strategy flag.
func (r *clusterRun) strategies(n *yaml.Node, offset int) {
	record := func(v *yaml.Node) {
		s := strings.ToLower(scalarOf(v))
		if s == "single" || s == "mixed" || s == "none" {
			r.facts.addStrategy(strategyFact{value: s, path: r.a.Path, line: v.Line + offset})
		}
	}
	for _, m := range []*yaml.Node{n, get(n, "spec")} {
		if mig := get(m, "mig"); mig != nil {
			if v := get(mig, "strategy"); v != nil {
				record(v)
			}
		}
		if fl := get(m, "flags"); fl != nil {
			if v := get(fl, "migStrategy"); v != nil {
				record(v)
			}
		}
	}
	// Environment and arguments of the device plugin's containers.
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		n = resolve(n)
		if n == nil || depth > maxYAMLDepth {
			return
		}
		if n.Kind == yaml.MappingNode {
			if scalarOf(get(n, "name")) == "MIG_STRATEGY" {
				if v := get(n, "value"); v != nil {
					record(v)
				}
			}
		}
		if n.Kind == yaml.ScalarNode {
			if v, ok := strings.CutPrefix(n.Value, "--mig-strategy="); ok {
				c := *n
				c.Value = v
				record(&c)
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	if kind := scalarOf(get(n, "kind")); kind == "DaemonSet" || kind == "Deployment" {
		walk(get(n, "spec"), 0)
	}
}

// timeSlicing records a device plugin config that time-slices GPUs.
func (r *clusterRun) timeSlicing(sh *yaml.Node, offset int) {
	ts := get(sh, "timeSlicing")
	if ts == nil {
		return
	}
	line := fieldLine(sh, "timeSlicing", "", ts.Line)
	res := get(ts, "resources")
	if res == nil || res.Kind != yaml.SequenceNode {
		return
	}
	for _, x := range res.Content {
		var rep int
		if v := get(x, "replicas"); v != nil && v.Decode(&rep) == nil && rep > 1 {
			r.facts.addTimeSlicing(sliceFact{path: r.a.Path, line: line + offset, layer: r.a.Layer, commit: r.a.Commit, note: r.a.Note,
				resource: scalarOf(get(x, "name")), replicas: rep})
			return
		}
	}
}
