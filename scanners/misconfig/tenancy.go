//go:build !mlwarden_sbatch

package misconfig

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mlwarden/mlwarden/scanners"
)

// Tenant isolation of GPU namespaces beyond NetworkPolicy and quota: Pod
// Security labels, LimitRanges and RBAC.
var (
	RuleGPUNamespacePodSecurity = scanners.Rule{
		ID: "misconfig/gpu-namespace-pod-security", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "GPU namespace without an enforced Pod Security level, or tenant pods in the GPU Operator's namespace",
		Why: "Without a pod-security.kubernetes.io/enforce label the cluster default applies, and the built-in default is privileged: any tenant pod may be privileged, use host namespaces or mount the node. " +
			"The GPU Operator's namespace is labelled privileged for its driver and toolkit pods, so a tenant pod there escapes Pod Security altogether.",
		Fix: "Label every GPU tenant namespace pod-security.kubernetes.io/enforce: baseline (or restricted); run tenant workloads outside the GPU Operator's namespace.",
	}
	RuleGPUNamespaceNoLimitRange = scanners.Rule{
		ID: "misconfig/gpu-namespace-no-limitrange", Check: scanners.CheckMisconfig, Severity: scanners.SeverityLow,
		Title: "GPU tenant namespace without a LimitRange",
		Why:   "Without a LimitRange a pod that sets no limits gets none: one tenant's job can take all the CPU and memory of a GPU node and starve the other tenants' jobs sharing it.",
		Fix:   "Add a LimitRange with default and max CPU and memory limits for containers to the namespace.",
	}
	RuleGPUNamespaceRBACCrossesTenants = scanners.Rule{
		ID: "misconfig/gpu-namespace-rbac-crosses-tenants", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "RBAC that crosses GPU tenants' namespaces",
		Why: "A RoleBinding in a GPU namespace that grants another namespace's service accounts, a binding to a role with wildcard verbs or resources, " +
			"or a ClusterRoleBinding that gives a tenant pods/exec or Secrets in every namespace lets one tenant read another's credentials and weights and run code in its pods.",
		Fix: "Bind only the namespace's own service accounts, to roles that list their verbs and resources; grant pods/exec and Secrets with RoleBindings in the tenant's own namespace.",
	}
)

// systemNamespaces are Kubernetes' own.
var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// operatorNamespaces are where the GPU Operator is installed by its docs
// (Helm: gpu-operator; OpenShift's OperatorHub: nvidia-gpu-operator).
var operatorNamespaces = []string{"gpu-operator", "nvidia-gpu-operator"}

// Pod Security Admission's namespace labels and the DRA admin label
// (resource.k8s.io/admin-access before Kubernetes 1.34).
const (
	labelPSAEnforce  = "pod-security.kubernetes.io/enforce"
	labelAdminAccess = "resource.kubernetes.io/admin-access"
	labelAdminOld    = "resource.k8s.io/admin-access"
)

// AdminNamespace reports whether a namespace's labels make it an
// administrators' namespace for DRA adminAccess: the label the API server
// requires before it admits such a request.
func AdminNamespace(labels map[string]string) bool {
	return labels[labelAdminAccess] == "true" || labels[labelAdminOld] == "true"
}

// PodSecurityProblem says what is wrong with a GPU tenant namespace's Pod
// Security labels, or "".
func PodSecurityProblem(labels map[string]string) string {
	switch v, ok := labels[labelPSAEnforce]; {
	case !ok || v == "":
		return "it has no " + labelPSAEnforce + " label, so the cluster default applies (the built-in default is privileged)"
	case v == "privileged":
		return "it is labelled " + labelPSAEnforce + ": privileged"
	}
	return ""
}

// operatorOwn reports whether a workload is the GPU Operator's own (its
// Deployment, the operands its ClusterPolicy manages, NFD, the validators):
// by owner, name or the labels the operator and its chart set.
func operatorOwn(meta metav1.ObjectMeta, template map[string]string) bool {
	for _, o := range meta.OwnerReferences {
		if o.Kind == "ClusterPolicy" || o.Kind == "NVIDIADriver" || strings.HasSuffix(strings.SplitN(o.APIVersion, "/", 2)[0], "nvidia.com") {
			return true
		}
	}
	for _, p := range []string{"nvidia-", "gpu-operator", "gpu-feature-discovery"} {
		if strings.HasPrefix(meta.Name, p) {
			return true
		}
	}
	for _, labels := range []map[string]string{meta.Labels, template} {
		for _, k := range []string{"app", "app.kubernetes.io/name", "app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by", "helm.sh/chart"} {
			v := labels[k]
			if strings.HasPrefix(v, "gpu-operator") || strings.HasPrefix(v, "nvidia-") || strings.HasPrefix(v, "node-feature-discovery") || v == "gpu-feature-discovery" {
				return true
			}
		}
	}
	return false
}

// operatorDeployment reports whether a workload is the GPU Operator
// itself, whose namespace is then the operator's.
func operatorDeployment(kind string, meta metav1.ObjectMeta) bool {
	for _, o := range meta.OwnerReferences {
		if o.Kind == "ClusterPolicy" {
			return true
		}
	}
	if kind != "Deployment" {
		return false
	}
	return meta.Name == "gpu-operator" || meta.Labels["app"] == "gpu-operator" || meta.Labels["app.kubernetes.io/component"] == "gpu-operator"
}

// RBACProblem is one way a binding crosses tenants: a binding to another
// namespace's service accounts is medium, wildcards and cluster-wide
// pods/exec or Secrets high.
type RBACProblem struct {
	Severity scanners.Severity
	Message  string
}

// roleFact is what a binding's judgement needs of a Role or ClusterRole.
type roleFact struct {
	Wildcard    bool `json:"wildcard,omitempty"`     // verbs or resources "*"
	ExecSecrets bool `json:"exec_secrets,omitempty"` // pods/exec or Secrets
}

// builtinRoles are Kubernetes' bootstrap ClusterRoles that matter here
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy): known without being
// in the target; one the target defines wins.
var builtinRoles = map[string]roleFact{
	"ClusterRole/cluster-admin": {Wildcard: true, ExecSecrets: true},
	"ClusterRole/admin":         {ExecSecrets: true},
	"ClusterRole/edit":          {ExecSecrets: true},
}

// judgeRules says what a role's rules grant.
func judgeRules(rules []rbacv1.PolicyRule) roleFact {
	var f roleFact
	for _, r := range rules {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
			f.Wildcard = true
		}
		if len(r.Resources) == 0 {
			continue // nonResourceURLs
		}
		exec := slices.Contains(r.Resources, "pods/exec") && (slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "get") || slices.Contains(r.Verbs, "*"))
		secrets := slices.Contains(r.Resources, "secrets") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "get" || v == "list" || v == "watch" || v == "*" })
		all := slices.Contains(r.Resources, "*") && (len(r.APIGroups) == 0 || slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*"))
		if exec || secrets || all && len(r.Verbs) > 0 {
			f.ExecSecrets = true
		}
	}
	return f
}

// bindingFact is a RoleBinding or ClusterRoleBinding.
type bindingFact struct {
	Namespace string           `json:"namespace,omitempty"` // "" for a ClusterRoleBinding
	Cluster   bool             `json:"cluster,omitempty"`
	Name      string           `json:"name"`
	RoleRef   rbacv1.RoleRef   `json:"role_ref"`
	Subjects  []rbacv1.Subject `json:"subjects,omitempty"`
	place
}

func roleKey(ns string, ref rbacv1.RoleRef) string {
	if ref.Kind == "Role" {
		return "Role/" + ns + "/" + ref.Name
	}
	return "ClusterRole/" + ref.Name
}

// role returns what the target (or Kubernetes' bootstrap policy) says a
// role grants; false when neither knows it.
func (s *clusterState) role(key string) (roleFact, bool) {
	if f, ok := s.t.Roles[key]; ok {
		return f, true
	}
	return builtinRole(key)
}

// subjectName shows a subject in messages.
func subjectName(sub rbacv1.Subject) string {
	if sub.Kind == rbacv1.ServiceAccountKind {
		return "service account " + sub.Namespace + "/" + sub.Name
	}
	return strings.ToLower(sub.Kind) + " " + sub.Name
}

// foreignSubject reports whether a subject of a binding in namespace ns
// is someone outside ns: another namespace's service account, or a group
// of other (or all) namespaces' service accounts or of every user.
func foreignSubject(ns string, sub rbacv1.Subject) bool {
	switch sub.Kind {
	case rbacv1.ServiceAccountKind:
		return sub.Namespace != "" && sub.Namespace != ns
	case rbacv1.GroupKind:
		if sa, ok := strings.CutPrefix(sub.Name, "system:serviceaccounts:"); ok {
			return sa != ns
		}
		return sub.Name == "system:serviceaccounts" || sub.Name == "system:authenticated" || sub.Name == "system:unauthenticated"
	}
	return false
}

// tenantSubject reports whether a subject of a ClusterRoleBinding is a
// tenant of a GPU namespace (its service accounts, or groups every tenant
// is in), and not an administrator.
func tenantSubject(sub rbacv1.Subject, gpuNS map[string]bool) bool {
	switch sub.Kind {
	case rbacv1.ServiceAccountKind:
		return gpuNS[sub.Namespace]
	case rbacv1.GroupKind:
		if sa, ok := strings.CutPrefix(sub.Name, "system:serviceaccounts:"); ok {
			return gpuNS[sa]
		}
		return sub.Name == "system:serviceaccounts" || sub.Name == "system:authenticated" || sub.Name == "system:unauthenticated"
	}
	return false
}

// RoleBindingProblems judges a RoleBinding in a GPU tenant namespace:
// subjects of other namespaces, a binding to a bootstrap role with
// wildcards (cluster-admin). The admission webhook asks it; a manifest
// scan also knows the roles the target defines.
func RoleBindingProblems(b *rbacv1.RoleBinding) []RBACProblem {
	return roleBindingProblems(b, builtinRole)
}

// ClusterRoleBindingProblems judges a ClusterRoleBinding that grants a
// bootstrap role to tenants of the GPU namespaces gpuNS.
func ClusterRoleBindingProblems(b *rbacv1.ClusterRoleBinding, gpuNS map[string]bool) []RBACProblem {
	return clusterRoleBindingProblems(b, builtinRole, gpuNS)
}

func builtinRole(key string) (roleFact, bool) {
	f, ok := builtinRoles[key]
	return f, ok
}

// roleBindingProblems: role says what the bound role grants (false: not
// known).
func roleBindingProblems(b *rbacv1.RoleBinding, role func(key string) (roleFact, bool)) []RBACProblem {
	var out []RBACProblem
	var foreign []string
	for _, sub := range b.Subjects {
		if foreignSubject(b.Namespace, sub) {
			foreign = append(foreign, subjectName(sub))
		}
	}
	key := roleKey(b.Namespace, b.RoleRef)
	if len(foreign) > 0 {
		out = append(out, RBACProblem{scanners.SeverityMedium, fmt.Sprintf("RoleBinding %s grants %s %s in namespace %s to %s of another namespace",
			b.Name, strings.ToLower(b.RoleRef.Kind), b.RoleRef.Name, b.Namespace, strings.Join(foreign, ", "))})
	}
	if f, ok := role(key); ok && f.Wildcard {
		out = append(out, RBACProblem{scanners.SeverityHigh, fmt.Sprintf("RoleBinding %s binds %s %s, whose rules have wildcard verbs or resources: every subject (%s) can do anything in namespace %s, Secrets and pods/exec included",
			b.Name, strings.ToLower(b.RoleRef.Kind), b.RoleRef.Name, subjectList(b.Subjects), b.Namespace)})
	}
	return out
}

// clusterRoleBindingProblems judges a ClusterRoleBinding: a role with
// wildcards, pods/exec or Secrets given to tenants of GPU namespaces
// (gpuNS), which then reach every namespace.
func clusterRoleBindingProblems(b *rbacv1.ClusterRoleBinding, role func(key string) (roleFact, bool), gpuNS map[string]bool) []RBACProblem {
	f, ok := role(roleKey("", b.RoleRef))
	if !ok || !f.Wildcard && !f.ExecSecrets {
		return nil
	}
	var tenants []string
	for _, sub := range b.Subjects {
		if tenantSubject(sub, gpuNS) {
			tenants = append(tenants, subjectName(sub))
		}
	}
	if len(tenants) == 0 {
		return nil
	}
	what := "pods/exec or Secrets"
	if f.Wildcard {
		what = "wildcard verbs or resources"
	}
	return []RBACProblem{{scanners.SeverityHigh, fmt.Sprintf("ClusterRoleBinding %s grants clusterrole %s (%s) in every namespace to %s, a tenant of a GPU namespace: it reaches the other tenants' Secrets and pods",
		b.Name, b.RoleRef.Name, what, strings.Join(tenants, ", "))}}
}

func subjectList(subs []rbacv1.Subject) string {
	var out []string
	for _, s := range subs {
		out = append(out, subjectName(s))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
