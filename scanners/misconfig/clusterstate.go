//go:build !mlwarden_sbatch

package misconfig

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mlwarden/mlwarden/scanners"
)

// clusterState is what one target's manifests say about its namespaces,
// kept until the end of the target. Facts are small (names, paths, lines),
// bounded by maxClusterObjects.
type clusterState struct {
	namespaces map[string]map[string]string // declared Namespace objects: labels
	managed    map[string]bool              // namespaces whose policy objects the target holds
	denyAll    map[string]bool              // namespaces with a default-deny NetworkPolicy
	quota      map[string]bool              // namespaces with a GPU quota
	foreign    map[string][]siteFact        // namespace: other namespaces' service accounts bound in it
	saTeam     map[string]string            // namespace/name: team label
	workloads  []workloadFact
	slicing    []sliceFact
	strategy   []strategyFact
	t          tenancyFacts
	objects    int
	full       bool // past maxClusterObjects (reported once)
}

// tenancyFacts are the DRA, Pod Security, LimitRange and RBAC facts; they
// are kept as they are (scanners.StateKeeper).
type tenancyFacts struct {
	NSSite       map[string]place     `json:"ns_site,omitempty"`       // where each Namespace object is
	LimitRange   map[string]bool      `json:"limit_range,omitempty"`   // namespaces with a LimitRange
	QuotaClasses map[string][]string  `json:"quota_classes,omitempty"` // device classes quotas bound
	Classes      map[string]bool      `json:"classes,omitempty"`       // DeviceClasses: selects an NVIDIA GPU driver
	Claims       map[string]claimFact `json:"claims,omitempty"`        // KIND/NS/NAME
	Admin        []adminFact          `json:"admin,omitempty"`
	Roles        map[string]roleFact  `json:"roles,omitempty"` // ClusterRole/NAME, Role/NS/NAME
	Bindings     []bindingFact        `json:"bindings,omitempty"`
	Operator     map[string]bool      `json:"operator,omitempty"` // namespaces the GPU Operator runs in
}

func (t *tenancyFacts) merge(o *tenancyFacts) {
	mergeMap(&t.NSSite, o.NSSite)
	mergeMap(&t.QuotaClasses, o.QuotaClasses)
	mergeMap(&t.Classes, o.Classes)
	mergeMap(&t.Claims, o.Claims)
	mergeMap(&t.Roles, o.Roles)
	for k, v := range o.LimitRange {
		initMap(&t.LimitRange)
		t.LimitRange[k] = t.LimitRange[k] || v
	}
	for k, v := range o.Operator {
		initMap(&t.Operator)
		t.Operator[k] = t.Operator[k] || v
	}
	t.Admin = append(t.Admin, o.Admin...)
	t.Bindings = append(t.Bindings, o.Bindings...)
}

func mergeMap[V any](dst *map[string]V, src map[string]V) {
	for k, v := range src {
		initMap(dst)
		(*dst)[k] = v
	}
}

type workloadFact struct {
	namespace, who, path string
	line                 int
	layer, commit, note  string
	sa                   string
	gpus                 []string
	product              string
	claims               []claimRef
	pending              []pendingProblem // pod rules, if its claims give it GPUs
	own                  bool             // the GPU Operator's own
}

// pendingProblem is a pod rule's finding for a pod whose GPUs come only
// from DRA claims, reported once the target's claims are known.
type pendingProblem struct {
	Rule     string `json:"rule"`
	Line     int    `json:"line"`
	Evidence string `json:"evidence"`
	Message  string `json:"message"`
}

type siteFact struct {
	what, path string
	line       int
}

type sliceFact struct {
	path                string
	line                int
	layer, commit, note string
	resource            string
	replicas            int
}

type strategyFact struct {
	value, path string
	line        int
}

func (s *clusterState) empty() bool {
	return s.objects == 0
}

func (s *clusterState) count() { s.objects++ }

func initMap[V any](m *map[string]V) {
	if *m == nil {
		*m = map[string]V{}
	}
}

func (s *clusterState) addNamespace(name string, labels map[string]string) {
	s.count()
	initMap(&s.namespaces)
	s.namespaces[name] = labels
}

func (s *clusterState) manage(ns string) {
	initMap(&s.managed)
	s.managed[ns] = true
}

func (s *clusterState) addNetpol(ns string, deny bool) {
	s.count()
	s.manage(ns)
	initMap(&s.denyAll)
	s.denyAll[ns] = s.denyAll[ns] || deny
}

func (s *clusterState) addQuota(ns string, gpu bool) {
	s.count()
	s.manage(ns)
	initMap(&s.quota)
	s.quota[ns] = s.quota[ns] || gpu
}

func (s *clusterState) addForeign(ns, sa, path string, line int) {
	s.count()
	initMap(&s.foreign)
	s.foreign[ns] = append(s.foreign[ns], siteFact{what: sa, path: path, line: line})
}

func (s *clusterState) addSA(ns, name, team string) {
	s.count()
	initMap(&s.saTeam)
	s.saTeam[ns+"/"+name] = team
}

func (s *clusterState) addWorkload(w workloadFact) {
	s.count()
	s.workloads = append(s.workloads, w)
}

func (s *clusterState) addTimeSlicing(f sliceFact) {
	s.count()
	s.slicing = append(s.slicing, f)
}

func (s *clusterState) addNamespaceSite(name string, p place) {
	initMap(&s.t.NSSite)
	s.t.NSSite[name] = p
}

func (s *clusterState) addLimitRange(ns string) {
	s.count()
	s.manage(ns)
	initMap(&s.t.LimitRange)
	s.t.LimitRange[ns] = true
}

func (s *clusterState) addQuotaClasses(ns string, classes []string) {
	if len(classes) == 0 {
		return
	}
	initMap(&s.t.QuotaClasses)
	s.t.QuotaClasses[ns] = append(s.t.QuotaClasses[ns], classes...)
}

func (s *clusterState) addClass(name string, nvidia bool) {
	s.count()
	initMap(&s.t.Classes)
	s.t.Classes[name] = nvidia
}

func (s *clusterState) addClaim(key string, f claimFact) {
	s.count()
	initMap(&s.t.Claims)
	s.t.Claims[key] = f
}

func (s *clusterState) addAdmin(f adminFact) {
	s.count()
	s.t.Admin = append(s.t.Admin, f)
}

func (s *clusterState) addRole(key string, f roleFact) {
	s.count()
	initMap(&s.t.Roles)
	s.t.Roles[key] = f
}

func (s *clusterState) addBinding(f bindingFact) {
	s.count()
	s.t.Bindings = append(s.t.Bindings, f)
}

func (s *clusterState) addOperator(ns string) {
	initMap(&s.t.Operator)
	s.t.Operator[ns] = true
}

func (s *clusterState) addStrategy(f strategyFact) {
	s.count()
	s.strategy = append(s.strategy, f)
}

// merge adds one file's facts; false when the target is past its bound
// (nothing more is kept).
func (s *clusterState) merge(o *clusterState) bool {
	if s.objects+o.objects > maxClusterObjects {
		return false
	}
	s.objects += o.objects
	for k, v := range o.namespaces {
		initMap(&s.namespaces)
		s.namespaces[k] = v
	}
	for k := range o.managed {
		s.manage(k)
	}
	for k, v := range o.denyAll {
		initMap(&s.denyAll)
		s.denyAll[k] = s.denyAll[k] || v
	}
	for k, v := range o.quota {
		initMap(&s.quota)
		s.quota[k] = s.quota[k] || v
	}
	for k, v := range o.foreign {
		initMap(&s.foreign)
		s.foreign[k] = append(s.foreign[k], v...)
	}
	for k, v := range o.saTeam {
		initMap(&s.saTeam)
		s.saTeam[k] = v
	}
	s.t.merge(&o.t)
	s.workloads = append(s.workloads, o.workloads...)
	s.slicing = append(s.slicing, o.slicing...)
	s.strategy = append(s.strategy, o.strategy...)
	return true
}

// nsName shows a namespace in messages.
func nsName(ns string) string {
	if ns == "" {
		return "the namespace the manifests are applied to (no metadata.namespace)"
	}
	return "namespace " + ns
}

// FinishTarget judges the target's namespaces as a whole. A namespace is
// judged for NetworkPolicy, quota and sharing only when the target
// declares it (a Namespace object) or holds its NetworkPolicies, quotas or
// RoleBindings: a repository with one training Job is not where its
// namespace's policies live.
func (c *Cluster) FinishTarget(ctx context.Context, t scanners.Target) ([]scanners.Finding, error) {
	c.mu.Lock()
	st := c.targets[t.Name]
	delete(c.targets, t.Name)
	c.mu.Unlock()
	if st == nil {
		return nil, nil
	}
	var out []scanners.Finding
	at := func(w workloadFact, rule scanners.Rule, evidence, msg string) {
		a := scanners.Artifact{Target: t.Name, Path: w.path, Layer: w.layer, Commit: w.commit, Note: w.note}
		f := scanners.At(&a, rule, w.line, msg)
		f.Evidence = clip(evidence, 120)
		out = append(out, f)
	}
	atPlace := func(p place, rule scanners.Rule, sev scanners.Severity, evidence, msg string) {
		a := scanners.Artifact{Target: t.Name, Path: p.Path, Layer: p.Layer, Commit: p.Commit, Note: p.Note}
		f := scanners.At(&a, rule, p.Line, msg)
		f.Severity = sev
		f.Evidence = clip(evidence, 120)
		out = append(out, f)
	}
	operatorNS := func(ns string) bool { return slices.Contains(operatorNamespaces, ns) || st.t.Operator[ns] }
	// GPU tenant workloads by namespace, in the order they were read: not
	// Kubernetes' own namespaces, not the GPU Operator's own pods.
	byNS := map[string][]workloadFact{}
	var order []string
	for _, w := range st.workloads {
		if operatorNS(w.namespace) && !w.own {
			at(w, RuleGPUNamespacePodSecurity, w.who, fmt.Sprintf("%s runs in %s, the GPU Operator's, which is labelled privileged for the driver and toolkit pods: a tenant workload there escapes Pod Security. %s Fix: %s",
				w.who, nsName(w.namespace), RuleGPUNamespacePodSecurity.Why, RuleGPUNamespacePodSecurity.Fix))
		}
		if w.own || slices.Contains(systemNamespaces, w.namespace) || !st.isGPU(w) {
			continue
		}
		if len(w.gpus) == 0 {
			for _, p := range w.pending {
				a := scanners.Artifact{Target: t.Name, Path: w.path, Layer: w.layer, Commit: w.commit, Note: w.note}
				rule := RuleGPUHostNamespace
				if p.Rule == RuleGPUHostPath.ID {
					rule = RuleGPUHostPath
				}
				f := scanners.At(&a, rule, p.Line, p.Message)
				f.Evidence = clip(p.Evidence, 120)
				out = append(out, f)
			}
		}
		if _, ok := byNS[w.namespace]; !ok {
			order = append(order, w.namespace)
		}
		byNS[w.namespace] = append(byNS[w.namespace], w)
	}
	gpuNS := map[string]bool{}
	for _, ns := range order {
		gpuNS[ns] = !operatorNS(ns)
		ws := byNS[ns]
		labels, declared := st.namespaces[ns]
		if !declared && !st.managed[ns] {
			continue
		}
		first := ws[0]
		names := workloadNames(ws)
		if !st.denyAll[ns] {
			at(first, RuleGPUNamespaceNoDefaultDeny, first.who, fmt.Sprintf("%s runs GPU workloads (%s) but has no default-deny NetworkPolicy (podSelector: {}, policyTypes including Ingress, no ingress rules): %s Fix: %s",
				nsName(ns), names, RuleGPUNamespaceNoDefaultDeny.Why, RuleGPUNamespaceNoDefaultDeny.Fix))
		}
		if !st.quotaBoundsGPU(ns) {
			at(first, RuleGPUNamespaceNoQuota, first.who, fmt.Sprintf("%s runs GPU workloads (%s) but no ResourceQuota bounds requests.nvidia.com/gpu or a GPU device class's devices (<class>.deviceclass.resource.k8s.io/devices): %s Fix: %s",
				nsName(ns), names, RuleGPUNamespaceNoQuota.Why, RuleGPUNamespaceNoQuota.Fix))
		}
		if msg := sharedBy(st, ns, ws); msg != "" {
			at(first, RuleGPUNamespaceShared, first.who, fmt.Sprintf("%s: %s. %s Fix: %s", nsName(ns), msg, RuleGPUNamespaceShared.Why, RuleGPUNamespaceShared.Fix))
		}
		if operatorNS(ns) {
			continue // its tenant workloads are reported above
		}
		if !st.t.LimitRange[ns] {
			at(first, RuleGPUNamespaceNoLimitRange, first.who, fmt.Sprintf("%s runs GPU workloads (%s) but has no LimitRange: %s Fix: %s",
				nsName(ns), names, RuleGPUNamespaceNoLimitRange.Why, RuleGPUNamespaceNoLimitRange.Fix))
		}
		if msg := PodSecurityProblem(labels); declared && msg != "" {
			msg = fmt.Sprintf("%s runs GPU workloads (%s) but %s: %s Fix: %s", nsName(ns), names, msg, RuleGPUNamespacePodSecurity.Why, RuleGPUNamespacePodSecurity.Fix)
			if p, ok := st.t.NSSite[ns]; ok {
				atPlace(p, RuleGPUNamespacePodSecurity, RuleGPUNamespacePodSecurity.Severity, "Namespace "+ns, msg)
			} else {
				at(first, RuleGPUNamespacePodSecurity, first.who, msg)
			}
		}
	}
	for _, b := range st.t.Bindings {
		var ps []RBACProblem
		switch {
		case b.Cluster:
			ps = clusterRoleBindingProblems(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.Name}, RoleRef: b.RoleRef, Subjects: b.Subjects}, st.role, gpuNS)
		case gpuNS[b.Namespace]:
			ps = roleBindingProblems(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace}, RoleRef: b.RoleRef, Subjects: b.Subjects}, st.role)
		}
		for _, p := range ps {
			atPlace(b.place, RuleGPUNamespaceRBACCrossesTenants, p.Severity, b.RoleRef.Kind+" "+b.RoleRef.Name,
				p.Message+". "+RuleGPUNamespaceRBACCrossesTenants.Why+" Fix: "+RuleGPUNamespaceRBACCrossesTenants.Fix)
		}
	}
	for _, a := range st.t.Admin {
		labels, declared := st.namespaces[a.Namespace]
		if !declared || AdminNamespace(labels) {
			continue // a namespace the target does not hold: its labels are not known
		}
		atPlace(a.place, RuleGPUClaimAdminAccess, RuleGPUClaimAdminAccess.Severity, "adminAccess: true",
			fmt.Sprintf("%s request %q asks for adminAccess in %s, which is not labelled %s: \"true\" (the administrators' namespace the API server requires for it): %s Fix: %s",
				a.Who, a.Request, nsName(a.Namespace), labelAdminAccess, RuleGPUClaimAdminAccess.Why, RuleGPUClaimAdminAccess.Fix))
	}
	finishClaimSharing(st, atPlace)
	out = append(out, c.finishSlicing(t, st)...)
	finishStrategy(st, at)
	return out, nil
}

func workloadNames(ws []workloadFact) string {
	var names []string
	for i, w := range ws {
		if i == 3 {
			names = append(names, fmt.Sprintf("%d more", len(ws)-3))
			break
		}
		names = append(names, w.who)
	}
	return strings.Join(names, ", ")
}

// sharedBy says how several teams share a namespace: its GPU workloads run
// as service accounts of different teams, or a RoleBinding in it grants
// other namespaces' service accounts.
func sharedBy(st *clusterState, ns string, ws []workloadFact) string {
	teams := map[string][]string{}
	var teamOrder []string
	for _, w := range ws {
		team := st.saTeam[ns+"/"+w.sa]
		if team == "" {
			continue
		}
		if _, ok := teams[team]; !ok {
			teamOrder = append(teamOrder, team)
		}
		if !slices.Contains(teams[team], w.sa) {
			teams[team] = append(teams[team], w.sa)
		}
	}
	var parts []string
	if len(teamOrder) > 1 {
		var ts []string
		for _, t := range teamOrder {
			ts = append(ts, fmt.Sprintf("%s (%s)", t, strings.Join(teams[t], ", ")))
		}
		parts = append(parts, "its GPU workloads run as service accounts of teams "+strings.Join(ts, " and "))
	}
	if f := st.foreign[ns]; len(f) > 0 {
		var sas []string
		for _, x := range f {
			if !slices.Contains(sas, x.what) {
				sas = append(sas, x.what)
			}
		}
		parts = append(parts, fmt.Sprintf("RoleBindings in it grant service accounts of other namespaces (%s, at %s:%d)", strings.Join(sas, ", "), f[0].path, f[0].line))
	}
	return strings.Join(parts, "; ")
}

// finishSlicing reports time-slicing when the target's namespaces say that
// untrusted tenants share the nodes: a namespace labelled
// mlwarden.io/trust=untrusted, or namespaces of two or more tenants (team,
// tenant or owner labels).
func (c *Cluster) finishSlicing(t scanners.Target, st *clusterState) []scanners.Finding {
	if len(st.slicing) == 0 {
		return nil
	}
	tenants := map[string]bool{}
	var why []string
	for _, ns := range sortedKeys(st.namespaces) {
		labels := st.namespaces[ns]
		if untrusted(labels) {
			why = append(why, "namespace "+ns+" is labelled untrusted")
		}
		if team := teamOf(labels); team != "" {
			tenants[team] = true
		}
	}
	if len(tenants) > 1 {
		why = append(why, fmt.Sprintf("namespaces of %d tenants (%s)", len(tenants), strings.Join(sortedKeys(tenants), ", ")))
	}
	if len(why) == 0 {
		return nil
	}
	var out []scanners.Finding
	for _, s := range st.slicing {
		a := scanners.Artifact{Target: t.Name, Path: s.path, Layer: s.layer, Commit: s.commit, Note: s.note}
		f := scanners.At(&a, RuleGPUTimeSlicingShared, s.line, fmt.Sprintf(
			"the device plugin time-slices %s into %d replicas while %s share the cluster's nodes: %s Fix: %s",
			s.resource, s.replicas, strings.Join(why, " and "), RuleGPUTimeSlicingShared.Why, RuleGPUTimeSlicingShared.Fix))
		f.Evidence = fmt.Sprintf("timeSlicing %s replicas: %d", s.resource, s.replicas)
		out = append(out, f)
	}
	return out
}

// finishStrategy reports GPU requests the target's MIG strategy cannot
// serve: nvidia.com/mig-* under single or none, a single-strategy product
// label (…-MIG-1g.10gb) under mixed.
func finishStrategy(st *clusterState, at func(workloadFact, scanners.Rule, string, string)) {
	if len(st.strategy) == 0 {
		return
	}
	values := map[string]strategyFact{}
	for _, s := range st.strategy {
		if _, ok := values[s.value]; !ok {
			values[s.value] = s
		}
	}
	if len(values) != 1 {
		return // several strategies (per node pool): not judged
	}
	var s strategyFact
	for _, v := range values {
		s = v
	}
	collect := func(w workloadFact, msg string) { at(w, RuleMIGStrategyMismatch, w.who, msg) }
	for _, w := range st.workloads {
		var mig []string
		for _, g := range w.gpus {
			if strings.HasPrefix(g, "nvidia.com/mig-") {
				mig = append(mig, g)
			}
		}
		switch {
		case len(mig) > 0 && s.value != "mixed":
			collect(w, fmt.Sprintf("%s requests %s, but the MIG strategy is %s (%s:%d): with %s the device plugin advertises no nvidia.com/mig-* resources, so the pod never schedules. Fix: %s",
				w.who, strings.Join(mig, ", "), s.value, s.path, s.line, s.value, RuleMIGStrategyMismatch.Fix))
		case s.value == "mixed" && strings.Contains(w.product, "-MIG-") && slices.Contains(w.gpus, "nvidia.com/gpu"):
			collect(w, fmt.Sprintf("%s requests nvidia.com/gpu on nvidia.com/gpu.product=%s, a label only the single strategy sets, but the MIG strategy is mixed (%s:%d): request nvidia.com/mig-%s instead. Fix: %s",
				w.who, w.product, s.path, s.line, migSuffix(w.product), RuleMIGStrategyMismatch.Fix))
		}
	}
}

// migSuffix is the profile in a single-strategy product label
// (NVIDIA-A100-SXM4-40GB-MIG-1g.5gb).
func migSuffix(product string) string {
	_, p, _ := strings.Cut(product, "-MIG-")
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// finishClaimSharing reports a ResourceClaim whose GpuConfig time-slices
// or MPS-shares its GPU while pods of more than one workload, or of more
// than one service account, use it. A ResourceClaimTemplate gives each
// pod a claim of its own, so only named claims are shared.
func finishClaimSharing(st *clusterState, atPlace func(place, scanners.Rule, scanners.Severity, string, string)) {
	for _, key := range sortedKeys(st.t.Claims) {
		c := st.t.Claims[key]
		if len(c.Sharing) == 0 || !strings.HasPrefix(key, "ResourceClaim/") {
			continue
		}
		var who, sas []string
		for _, w := range st.workloads {
			for _, r := range w.claims {
				if !r.Template && r.key(w.namespace) == key {
					if !slices.Contains(who, w.who) {
						who = append(who, w.who)
					}
					if !slices.Contains(sas, w.sa) {
						sas = append(sas, w.sa)
					}
				}
			}
		}
		if len(who) < 2 && len(sas) < 2 {
			continue
		}
		_, name, _ := strings.Cut(strings.TrimPrefix(key, "ResourceClaim/"), "/")
		for _, s := range c.Sharing {
			p := c.place
			p.Line = s.Line
			atPlace(p, RuleGPUTimeSlicingShared, RuleGPUTimeSlicingShared.Severity, "sharing.strategy: "+s.Strategy, fmt.Sprintf(
				"ResourceClaim %s shares its GPU with sharing.strategy %s among %s (service accounts %s): %s Fix: %s",
				name, s.Strategy, strings.Join(who, ", "), strings.Join(sas, ", "), RuleGPUTimeSlicingShared.Why,
				"give each workload its own claim (a ResourceClaimTemplate), or a MIG device (device class mig.nvidia.com) where tenants differ."))
		}
	}
}
