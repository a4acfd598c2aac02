//go:build !mlwarden_sbatch

package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mlwarden/mlwarden/scanners"
)

// maxObjects bounds the objects of one kind a walk reads: a server that
// pages forever is an error (exit 2), not an endless scan.
const maxObjects = 1_000_000

// walk is one Walk's state: what the image attachment needs and nothing
// of the objects themselves, which go to the sink as they arrive.
type walk struct {
	s    *Source
	sink scanners.Sink
	// owners maps the UID of a workload listed (or of a ReplicaSet or Job
	// that one of them owns) to the workload it stands for
	// (NAMESPACE/KIND/NAME): a pod it owns is not judged again, its images
	// are that workload's.
	owners map[string]string
	// roleRefs are the ClusterRoles the RoleBindings of a one-namespace
	// scan name: those are read, not every ClusterRole.
	roleRefs []string
}

// kind is one kind the walk lists.
type kind struct {
	name    string // plural, as RBAC names it (resource.group)
	cluster bool   // cluster-scoped
	// inNamespaceScan: a cluster-scoped kind read in a one-namespace scan
	// too (the namespace itself, device classes, the ClusterRoles its
	// RoleBindings name).
	inNamespaceScan bool
	// optional, when set, is the note for a server that does not serve it.
	optional string
	list     func(context.Context, *walk) error
}

// ClusterPolicy is the GPU Operator's custom resource.
var clusterPolicy = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}

// Kinds lists what a k8s: target reads, as the read-only ClusterRole
// grants it (deploy/helm/mlwarden templates/k8s-reader.yaml; a test keeps
// them the same): API group and resources.
func Kinds() map[string][]string {
	out := map[string][]string{}
	for _, k := range kinds {
		res, group, _ := strings.Cut(k.name, ".")
		out[group] = append(out[group], res)
	}
	return out
}

// kinds in the order they are listed: controllers before the ReplicaSets
// and Jobs they own, and those before pods; RoleBindings before
// ClusterRoles.
var kinds = []kind{
	{name: "namespaces", cluster: true, inNamespaceScan: true, list: func(ctx context.Context, w *walk) error {
		if ns := w.s.namespace; ns != "" {
			o, err := w.s.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return w.emit(ctx, "v1", "Namespace", o.ObjectMeta, o)
		}
		return pages(ctx, w, w.s.client.CoreV1().Namespaces().List, func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items },
			func(o *corev1.Namespace) error { return w.emit(ctx, "v1", "Namespace", o.ObjectMeta, o) })
	}},
	{name: "deployments.apps", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.AppsV1().Deployments(w.s.namespace).List, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items },
			func(o *appsv1.Deployment) error {
				return w.workload(ctx, "apps/v1", "Deployment", o.ObjectMeta, &o.Spec.Template.Spec, o)
			})
	}},
	{name: "replicasets.apps", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.AppsV1().ReplicaSets(w.s.namespace).List, func(l *appsv1.ReplicaSetList) []appsv1.ReplicaSet { return l.Items },
			func(o *appsv1.ReplicaSet) error {
				if w.owned(o.ObjectMeta, "Deployment", &o.Spec.Template.Spec) {
					return nil
				}
				return w.workload(ctx, "apps/v1", "ReplicaSet", o.ObjectMeta, &o.Spec.Template.Spec, o)
			})
	}},
	{name: "statefulsets.apps", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.AppsV1().StatefulSets(w.s.namespace).List, func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items },
			func(o *appsv1.StatefulSet) error {
				return w.workload(ctx, "apps/v1", "StatefulSet", o.ObjectMeta, &o.Spec.Template.Spec, o)
			})
	}},
	{name: "daemonsets.apps", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.AppsV1().DaemonSets(w.s.namespace).List, func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items },
			func(o *appsv1.DaemonSet) error {
				return w.workload(ctx, "apps/v1", "DaemonSet", o.ObjectMeta, &o.Spec.Template.Spec, o)
			})
	}},
	{name: "cronjobs.batch", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.BatchV1().CronJobs(w.s.namespace).List, func(l *batchv1.CronJobList) []batchv1.CronJob { return l.Items },
			func(o *batchv1.CronJob) error {
				return w.workload(ctx, "batch/v1", "CronJob", o.ObjectMeta, &o.Spec.JobTemplate.Spec.Template.Spec, o)
			})
	}},
	{name: "jobs.batch", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.BatchV1().Jobs(w.s.namespace).List, func(l *batchv1.JobList) []batchv1.Job { return l.Items },
			func(o *batchv1.Job) error {
				if w.owned(o.ObjectMeta, "CronJob", &o.Spec.Template.Spec) {
					return nil
				}
				return w.workload(ctx, "batch/v1", "Job", o.ObjectMeta, &o.Spec.Template.Spec, o)
			})
	}},
	{name: "pods", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.CoreV1().Pods(w.s.namespace).List, func(l *corev1.PodList) []corev1.Pod { return l.Items },
			func(o *corev1.Pod) error { return w.pod(ctx, o) })
	}},
	{name: "networkpolicies.networking.k8s.io", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.NetworkingV1().NetworkPolicies(w.s.namespace).List,
			func(l *networkingv1.NetworkPolicyList) []networkingv1.NetworkPolicy { return l.Items },
			func(o *networkingv1.NetworkPolicy) error {
				return w.emit(ctx, "networking.k8s.io/v1", "NetworkPolicy", o.ObjectMeta, o)
			})
	}},
	{name: "resourcequotas", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.CoreV1().ResourceQuotas(w.s.namespace).List, func(l *corev1.ResourceQuotaList) []corev1.ResourceQuota { return l.Items },
			func(o *corev1.ResourceQuota) error { return w.emit(ctx, "v1", "ResourceQuota", o.ObjectMeta, o) })
	}},
	{name: "limitranges", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.CoreV1().LimitRanges(w.s.namespace).List, func(l *corev1.LimitRangeList) []corev1.LimitRange { return l.Items },
			func(o *corev1.LimitRange) error { return w.emit(ctx, "v1", "LimitRange", o.ObjectMeta, o) })
	}},
	{name: "roles.rbac.authorization.k8s.io", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.RbacV1().Roles(w.s.namespace).List, func(l *rbacv1.RoleList) []rbacv1.Role { return l.Items },
			func(o *rbacv1.Role) error {
				return w.emit(ctx, "rbac.authorization.k8s.io/v1", "Role", o.ObjectMeta, o)
			})
	}},
	{name: "rolebindings.rbac.authorization.k8s.io", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.RbacV1().RoleBindings(w.s.namespace).List, func(l *rbacv1.RoleBindingList) []rbacv1.RoleBinding { return l.Items },
			func(o *rbacv1.RoleBinding) error {
				if o.RoleRef.Kind == "ClusterRole" && !contains(w.roleRefs, o.RoleRef.Name) {
					w.roleRefs = append(w.roleRefs, o.RoleRef.Name)
				}
				return w.emit(ctx, "rbac.authorization.k8s.io/v1", "RoleBinding", o.ObjectMeta, o)
			})
	}},
	{name: "clusterroles.rbac.authorization.k8s.io", cluster: true, inNamespaceScan: true, list: func(ctx context.Context, w *walk) error {
		emit := func(o *rbacv1.ClusterRole) error {
			return w.emit(ctx, "rbac.authorization.k8s.io/v1", "ClusterRole", o.ObjectMeta, o)
		}
		if w.s.namespace == "" {
			return pages(ctx, w, w.s.client.RbacV1().ClusterRoles().List, func(l *rbacv1.ClusterRoleList) []rbacv1.ClusterRole { return l.Items }, emit)
		}
		for _, n := range w.roleRefs {
			o, err := w.s.client.RbacV1().ClusterRoles().Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			if err := emit(o); err != nil {
				return err
			}
		}
		return nil
	}},
	{name: "clusterrolebindings.rbac.authorization.k8s.io", cluster: true, list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.RbacV1().ClusterRoleBindings().List,
			func(l *rbacv1.ClusterRoleBindingList) []rbacv1.ClusterRoleBinding { return l.Items },
			func(o *rbacv1.ClusterRoleBinding) error {
				return w.emit(ctx, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", o.ObjectMeta, o)
			})
	}},
	{name: "resourceclaims.resource.k8s.io", optional: "resource.k8s.io/v1 is not served (Kubernetes before 1.34): DRA claims not read", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.ResourceV1().ResourceClaims(w.s.namespace).List,
			func(l *resourcev1.ResourceClaimList) []resourcev1.ResourceClaim { return l.Items },
			func(o *resourcev1.ResourceClaim) error {
				return w.emit(ctx, "resource.k8s.io/v1", "ResourceClaim", o.ObjectMeta, o)
			})
	}},
	{name: "resourceclaimtemplates.resource.k8s.io", optional: "resource.k8s.io/v1 is not served (Kubernetes before 1.34): DRA claim templates not read", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.ResourceV1().ResourceClaimTemplates(w.s.namespace).List,
			func(l *resourcev1.ResourceClaimTemplateList) []resourcev1.ResourceClaimTemplate { return l.Items },
			func(o *resourcev1.ResourceClaimTemplate) error {
				return w.emit(ctx, "resource.k8s.io/v1", "ResourceClaimTemplate", o.ObjectMeta, o)
			})
	}},
	{name: "deviceclasses.resource.k8s.io", cluster: true, inNamespaceScan: true, optional: "resource.k8s.io/v1 is not served (Kubernetes before 1.34): device classes not read", list: func(ctx context.Context, w *walk) error {
		return pages(ctx, w, w.s.client.ResourceV1().DeviceClasses().List,
			func(l *resourcev1.DeviceClassList) []resourcev1.DeviceClass { return l.Items },
			func(o *resourcev1.DeviceClass) error {
				return w.emit(ctx, "resource.k8s.io/v1", "DeviceClass", o.ObjectMeta, o)
			})
	}},
	{name: "clusterpolicies.nvidia.com", cluster: true, optional: "the GPU Operator's ClusterPolicy (nvidia.com/v1) is not served: the operator is not installed", list: func(ctx context.Context, w *walk) error {
		opts := metav1.ListOptions{Limit: w.s.o.PageSize}
		for n := 0; ; {
			l, err := w.s.dynamic.Resource(clusterPolicy).List(ctx, opts)
			if err != nil {
				return err
			}
			for i := range l.Items {
				o := l.Items[i].Object
				delete(o, "status")
				if m, ok := o["metadata"].(map[string]any); ok {
					delete(m, "managedFields")
				}
				if err := w.write(ctx, "", "ClusterPolicy", l.Items[i].GetName(), o); err != nil {
					return err
				}
			}
			if n += len(l.Items); n > maxObjects {
				return fmt.Errorf("more than %d objects", maxObjects)
			}
			if opts.Continue = l.GetContinue(); opts.Continue == "" {
				return nil
			}
		}
	}},
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// pages lists one kind page by page (limit/continue) and hands each object
// to each as its page arrives; only one page is held at a time.
func pages[L interface{ GetContinue() string }, T any](ctx context.Context, w *walk,
	list func(context.Context, metav1.ListOptions) (L, error), items func(L) []T, each func(*T) error) error {
	opts := metav1.ListOptions{Limit: w.s.o.PageSize}
	for n := 0; ; {
		l, err := list(ctx, opts)
		if err != nil {
			return err
		}
		it := items(l)
		for i := range it {
			if err := each(&it[i]); err != nil {
				return err
			}
		}
		if n += len(it); n > maxObjects {
			return fmt.Errorf("more than %d objects", maxObjects)
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// key names a namespaced or cluster-scoped object: NAMESPACE/KIND/NAME or
// KIND/NAME.
func key(ns, kind, name string) string {
	if ns == "" {
		return kind + "/" + name
	}
	return ns + "/" + kind + "/" + name
}

// workload emits a workload and records its UID and the images its pod
// template names.
func (w *walk) workload(ctx context.Context, apiVersion, kind string, m metav1.ObjectMeta, spec *corev1.PodSpec, obj any) error {
	k := key(m.Namespace, kind, m.Name)
	w.owners[string(m.UID)] = k
	w.s.images.template(k, spec)
	return w.emit(ctx, apiVersion, kind, m, obj)
}

// owned reports whether a ReplicaSet or Job is run by a workload already
// listed (a Deployment, a CronJob: ownerKind), which then stands for it.
func (w *walk) owned(m metav1.ObjectMeta, ownerKind string, spec *corev1.PodSpec) bool {
	c := metav1.GetControllerOfNoCopy(&m)
	if c == nil || c.Kind != ownerKind {
		return false
	}
	k, ok := w.owners[string(c.UID)]
	if !ok {
		return false
	}
	w.owners[string(m.UID)] = k
	w.s.images.template(k, spec)
	return true
}

// pod emits a pod that no listed workload controls; a controlled one is
// judged through its workload, and only its images (by digest, from its
// status) are kept.
func (w *walk) pod(ctx context.Context, o *corev1.Pod) error {
	if c := metav1.GetControllerOfNoCopy(&o.ObjectMeta); c != nil {
		if k, ok := w.owners[string(c.UID)]; ok {
			w.s.images.pod(k, o)
			return nil
		}
	}
	w.s.images.pod(key(o.Namespace, "Pod", o.Name), o)
	return w.emit(ctx, "v1", "Pod", o.ObjectMeta, o)
}

// emit hands one typed object to the sink as YAML.
func (w *walk) emit(ctx context.Context, apiVersion, kind string, m metav1.ObjectMeta, obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", key(m.Namespace, kind, m.Name), err)
	}
	var o map[string]any
	if err := json.Unmarshal(data, &o); err != nil {
		return fmt.Errorf("%s: %w", key(m.Namespace, kind, m.Name), err)
	}
	o["apiVersion"], o["kind"] = apiVersion, kind
	delete(o, "status")
	if md, ok := o["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		if a, ok := md["annotations"].(map[string]any); ok {
			// kubectl's copy of the object as applied: the object again,
			// which would be judged twice by the line checks.
			delete(a, corev1.LastAppliedConfigAnnotation)
			if len(a) == 0 {
				delete(md, "annotations")
			}
		}
	}
	return w.write(ctx, m.Namespace, kind, m.Name, o)
}

// write hands the object o (an API object as JSON values) to the sink as
// the YAML artifact NAMESPACE/KIND/NAME.yaml.
func (w *walk) write(ctx context.Context, ns, kind, name string, o map[string]any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := Marshal(o)
	if err != nil {
		return fmt.Errorf("%s: %w", key(ns, kind, name), err)
	}
	p := path.Clean(key(ns, kind, name)) + ".yaml"
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: w.s.name, TargetKind: scanners.KindCluster,
		Path: p, Size: int64(len(data)), Mode: 0o444}
	return w.sink.Artifact(a, bytes.NewReader(data))
}

// Marshal is how an object is written as YAML: keys sorted, as
// sigs.k8s.io/yaml writes them (and `kubectl get -o yaml` does). Writing
// the same objects to files with it gives a directory that scans with the
// same findings as the live target.
func Marshal(o any) ([]byte, error) {
	return yaml.Marshal(o)
}

// ReadRules are the RBAC rules a k8s: target needs: get, list and watch on
// exactly the kinds it reads, and nothing else. The chart's read-only
// ClusterRole (deploy/helm/mlwarden, k8sReader) grants these; its test
// keeps the two the same.
func ReadRules() []rbacv1.PolicyRule {
	groups := Kinds()
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	slices.Sort(names)
	var out []rbacv1.PolicyRule
	for _, g := range names {
		res := slices.Sorted(slices.Values(groups[g]))
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: res, Verbs: []string{"get", "list", "watch"}})
	}
	return out
}
