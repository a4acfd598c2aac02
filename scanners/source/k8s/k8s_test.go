//go:build !mlwarden_sbatch

package k8s_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mlwarden/mlwarden/internal/integration"
	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/scanners/source/k8s"
)

// Env names the test API server's kubeconfig (.ci/kube.sh exports it).
const (
	Env       = "MLWARDEN_TEST_KUBECONFIG"
	EnvReader = "MLWARDEN_TEST_KUBECONFIG_READER"
	start     = "source .ci/kube.sh in the shell that runs go test"
	context0  = "mlwarden-test" // the context .ci/kube.sh writes
)

// server returns the admin kubeconfig and a client of the test API server.
func server(t *testing.T) (string, kubernetes.Interface) {
	t.Helper()
	kc := os.Getenv(Env)
	if kc == "" {
		integration.Skip(t, "a Kubernetes API server", Env+" is not set", start)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("%s=%s: the server does not answer: %v (%s)", Env, kc, err, start)
	}
	integration.Ran(t, "the Kubernetes API server", cfg.Host)
	return kc, cs
}

func randName(t *testing.T, prefix string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}

// fixture is what a test created: the namespace, and each object as the
// test wrote it (for the manifest side of the identity test).
type fixture struct {
	ns      string
	objects map[string]runtime.Object // NAMESPACE/KIND/NAME → object
	image   string                    // the workloads' image, by tag
	digest  string                    // its repository digest
}

// createFixture creates a namespace with a GPU Deployment, a bare GPU
// Pod (with the image's digest in its status), a Role and RoleBinding,
// all running one image pushed to the loopback registry.
func createFixture(t *testing.T, cs kubernetes.Interface) *fixture {
	t.Helper()
	ctx := context.Background()
	reg := registrytest.Any(t)
	ref := registrytest.Repo(t, reg) + ":v1"
	h := registrytest.PushRandom(t, ref)
	repo, _, _ := strings.Cut(ref, ":v1")
	f := &fixture{ns: randName(t, "mlw"), objects: map[string]runtime.Object{}, image: ref, digest: repo + "@" + h.String()}
	t.Cleanup(func() {
		cs.CoreV1().Namespaces().Delete(context.Background(), f.ns, metav1.DeleteOptions{})
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	nsObj := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: f.ns}}
	_, err := cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{})
	must(err)
	f.objects["Namespace/"+f.ns] = nsObj
	// No controller-manager: a bare Pod needs its ServiceAccount made.
	_, err = cs.CoreV1().ServiceAccounts(f.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	must(err)

	gpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	spec := func() corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "train", Image: ref, Resources: gpu,
			SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}}
	}
	labels := map[string]string{"app": "train"}
	dep := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: f.ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec()}}}
	_, err = cs.AppsV1().Deployments(f.ns).Create(ctx, dep, metav1.CreateOptions{})
	must(err)
	f.objects[f.ns+"/Deployment/train"] = dep

	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "notebook", Namespace: f.ns}, Spec: spec()}
	created, err := cs.CoreV1().Pods(f.ns).Create(ctx, pod, metav1.CreateOptions{})
	must(err)
	f.objects[f.ns+"/Pod/notebook"] = pod
	// What a kubelet would report: the image by digest.
	created.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "train", Image: ref, ImageID: f.digest}}
	_, err = cs.CoreV1().Pods(f.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	must(err)

	np := &networkingv1.NetworkPolicy{TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "allow-all", Namespace: f.ns},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: labels},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}}
	_, err = cs.NetworkingV1().NetworkPolicies(f.ns).Create(ctx, np, metav1.CreateOptions{})
	must(err)
	f.objects[f.ns+"/NetworkPolicy/allow-all"] = np

	role := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: "exec", Namespace: f.ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}}}
	_, err = cs.RbacV1().Roles(f.ns).Create(ctx, role, metav1.CreateOptions{})
	must(err)
	f.objects[f.ns+"/Role/exec"] = role
	return f
}

func ptr[T any](v T) *T { return &v }

// counting counts the API requests, by method.
type counting struct {
	rt    http.RoundTripper
	lists atomic.Int64
	all   atomic.Int64
	write atomic.Int64
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.all.Add(1)
	if r.Method != http.MethodGet {
		c.write.Add(1)
	}
	if r.Method == http.MethodGet && r.URL.Query().Has("limit") {
		c.lists.Add(1)
	}
	return c.rt.RoundTrip(r)
}

// scanK8s runs the whole pipeline on targets with kubeconfig kc.
func scanK8s(t *testing.T, kc string, o k8s.Options, targets ...string) *scanners.Result {
	t.Helper()
	o.Kubeconfig = kc
	sc, err := scan.New(scan.Options{K8s: o, Image: image.Options{NoCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var ts []scan.Target
	for _, x := range targets {
		ts = append(ts, scan.Target{Ref: x})
	}
	res, err := sc.Run(context.Background(), ts...)
	if err != nil {
		t.Fatal(err)
	}
	return res.Result
}

// ruleCounts counts the findings of target by rule ID.
func ruleCounts(res *scanners.Result, target string) map[string]int {
	out := map[string]int{}
	for _, f := range res.Findings {
		if f.Target == target {
			out[f.RuleID]++
		}
	}
	return out
}

func TestLiveCluster(t *testing.T) {
	kc, cs := server(t)
	f := createFixture(t, cs)
	target := "k8s:" + context0 + "/" + f.ns

	var count counting
	res := scanK8s(t, kc, k8s.Options{PageSize: 1, WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		count.rt = rt
		return &count
	}}, target)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if count.write.Load() != 0 {
		t.Errorf("%d requests were not GETs: the scan must never write to the cluster", count.write.Load())
	}

	t.Run("findings at k8s: locations", func(t *testing.T) {
		got := map[string]bool{}
		for _, fd := range res.Findings {
			if fd.Target == target {
				got[fd.RuleID+" "+fd.Path] = true
			}
		}
		var paths []string
		for k := range got {
			paths = append(paths, k)
		}
		slices.Sort(paths)
		for _, p := range []string{f.ns + "/Deployment/train.yaml", f.ns + "/Pod/notebook.yaml"} {
			found := false
			for _, k := range paths {
				if strings.HasSuffix(k, " "+p) {
					found = true
				}
			}
			if !found {
				t.Errorf("no finding at %s %s; findings: %v", target, p, paths)
			}
		}
	})

	t.Run("image once, by digest, with its workloads", func(t *testing.T) {
		var images []scanners.Target
		for _, tg := range res.Targets {
			if tg.Kind == scanners.KindImage {
				images = append(images, tg)
			}
		}
		// The Deployment has no pods (no controller-manager): its image is
		// known by tag; the bare pod's status gives the digest.
		names := []string{}
		for _, tg := range images {
			names = append(names, tg.Name)
		}
		slices.Sort(names)
		want := []string{f.digest, f.image}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Fatalf("image targets %v, want %v", names, want)
		}
		for _, tg := range images {
			note := strings.Join(tg.Notes, "\n")
			w := f.ns + "/Pod/notebook"
			if tg.Name == f.image {
				w = f.ns + "/Deployment/train"
			}
			if !strings.Contains(note, "run by 1 workload(s) of "+target+": "+w) {
				t.Errorf("image %s notes %q, want it run by %s", tg.Name, note, w)
			}
		}
	})

	t.Run("paging", func(t *testing.T) {
		// Page size 1: every kind with n objects takes n (or n+1) lists.
		if n := count.lists.Load(); n < 15 {
			t.Errorf("%d list requests with page size 1, want one per page", n)
		}
	})

	t.Run("namespace filter", func(t *testing.T) {
		other := createFixture(t, cs)
		res := scanK8s(t, kc, k8s.Options{NoImages: true}, target)
		for _, fd := range res.Findings {
			if strings.Contains(fd.Path, other.ns) {
				t.Errorf("finding of namespace %s in a scan of %s: %s %s", other.ns, f.ns, fd.RuleID, fd.Path)
			}
		}
	})

	t.Run("live and manifests judge alike", func(t *testing.T) {
		dir := t.TempDir()
		for k, o := range f.objects {
			data, err := k8s.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(k)+".yaml")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files := scanK8s(t, kc, k8s.Options{}, dir)
		live := scanK8s(t, kc, k8s.Options{NoImages: true}, target)
		a, b := ruleCounts(live, target), ruleCounts(files, dir)
		if !maps.Equal(a, b) {
			t.Errorf("live findings by rule %v, manifest files' %v", a, b)
		}
		if len(a) == 0 {
			t.Error("no findings at all: the fixture is meant to have some")
		}
	})
}

func TestForbiddenListsAreErrors(t *testing.T) {
	_, cs := server(t)
	reader := os.Getenv(EnvReader)
	if reader == "" {
		integration.Skip(t, "the read-only user's kubeconfig", EnvReader+" is not set", start)
	}
	f := createFixture(t, cs)
	target := "k8s:" + context0 + "/" + f.ns
	// Unbound, the reader may list nothing: every kind is an error.
	res := scanK8s(t, reader, k8s.Options{NoImages: true}, target)
	if len(res.Errors) == 0 {
		t.Fatal("no errors from a user who may not list anything")
	}
	notes := strings.Join(res.Targets[0].Notes, "\n")
	if !strings.Contains(notes, "pods not read: forbidden") {
		t.Errorf("notes %q do not name the pods as forbidden", notes)
	}
	if code := scan.ExitCode(res, nil); code != scan.ExitError {
		t.Errorf("exit code %d, want %d", code, scan.ExitError)
	}

	// Bound to the read-only ClusterRole, it reads everything.
	ctx := context.Background()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: randName(t, "mlwarden-reader")}, Rules: k8s.ReadRules()}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{}) })
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "mlwarden-reader"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	// RBAC takes effect at once in the API server (no cache to wait for).
	for _, tg := range []string{target, "k8s:" + context0} {
		res = scanK8s(t, reader, k8s.Options{NoImages: true}, tg)
		if len(res.Errors) > 0 {
			t.Errorf("%s with the read-only ClusterRole: errors %v", tg, res.Errors)
		}
	}
}
