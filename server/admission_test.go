//go:build !mlwarden_sbatch

package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mlwarden/mlwarden/server"
)

// workloadKinds maps each admitted kind to its group, resource and the
// captured object in testdata/objects.
var workloadKinds = []struct {
	kind, group, resource, file string
}{
	{"Pod", "", "pods", "pod.json"},
	{"Deployment", "apps", "deployments", "deployment.json"},
	{"StatefulSet", "apps", "statefulsets", "statefulset.json"},
	{"DaemonSet", "apps", "daemonsets", "daemonset.json"},
	{"ReplicaSet", "apps", "replicasets", "replicasets.json"},
	{"Job", "batch", "jobs", "job.json"},
	{"CronJob", "batch", "cronjobs", "cronjob.json"},
}

// object reads a captured object and fills in its images and namespace.
func object(t *testing.T, file, image, initImage, ns string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/objects/" + strings.Replace(file, "replicasets", "replicaset", 1))
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(`"INIT_IMAGE"`, fmt.Sprintf("%q", initImage), `"IMAGE"`, fmt.Sprintf("%q", image), `"NAMESPACE"`, fmt.Sprintf("%q", ns))
	return []byte(r.Replace(string(b)))
}

// reviewJSON is an AdmissionReview as the API server sends it.
func reviewJSON(t *testing.T, uid, kind, group, res, op, ns string, obj []byte, dryRun bool) []byte {
	t.Helper()
	version := "v1"
	gvk := map[string]string{"group": group, "version": version, "kind": kind}
	gvr := map[string]string{"group": group, "version": version, "resource": res}
	optKind := "CreateOptions"
	var old json.RawMessage = []byte("null")
	if op == "UPDATE" {
		optKind, old = "UpdateOptions", obj
	}
	var o struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	json.Unmarshal(obj, &o)
	return mustJSON(t, map[string]any{
		"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
		"request": map[string]any{
			"uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
			"name": o.Metadata.Name, "namespace": ns, "operation": op,
			"userInfo":  map[string]any{"username": "kubernetes-admin", "groups": []string{"kubeadm:cluster-admins", "system:authenticated"}},
			"object":    json.RawMessage(obj),
			"oldObject": old,
			"dryRun":    dryRun,
			"options":   map[string]any{"kind": optKind, "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl-client-side-apply", "fieldValidation": "Strict"},
		},
	})
}

// admit posts a review and decodes the answer.
func admit(t *testing.T, url string, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	resp, err := http.Post(url+"/admission", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admission: HTTP %d: %s", resp.StatusCode, data)
	}
	var rev admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &rev); err != nil {
		t.Fatalf("decode answer: %v\n%s", err, data)
	}
	if rev.APIVersion != "admission.k8s.io/v1" || rev.Kind != "AdmissionReview" || rev.Response == nil {
		t.Fatalf("answer is not an AdmissionReview v1 with a response: %s", data)
	}
	for _, w := range rev.Response.Warnings {
		if n := len([]rune(w)); n > 120 {
			t.Errorf("warning of %d characters: %q", n, w)
		}
	}
	return rev.Response
}

func message(r *admissionv1.AdmissionResponse) string {
	if r.Result == nil {
		return ""
	}
	return r.Result.Message
}

// testImages pushes a clean and a bad image.
func testImages(t *testing.T, reg string) (good, bad name.Digest) {
	good = pushImage(t, reg, "ml/good", "v1", map[string]string{"app/train.py": "print('ok')\n"})
	bad = pushImage(t, reg, "ml/bad", "v1", map[string]string{"app/.env": "TOKEN=" + badMarker + "\n", "app/train.py": "print('ok')\n"})
	return good, bad
}

func TestAdmissionWorkloads(t *testing.T) {
	reg := startRegistry(t, "", "")
	good, bad := testImages(t, reg)
	sc := newCounting()
	_, hs := startServer(t, server.WithScanner(sc))

	for _, k := range workloadKinds {
		for _, op := range []string{"CREATE", "UPDATE"} {
			t.Run(k.kind+"/"+op, func(t *testing.T) {
				cases := []struct {
					name, image, init string
					allowed           bool
				}{
					{"clean", good.String(), good.String(), true},
					{"bad container", bad.String(), good.String(), false},
					{"bad init container", good.String(), bad.String(), false},
				}
				for i, c := range cases {
					uid := fmt.Sprintf("%s-%s-%d", strings.ToLower(k.kind), strings.ToLower(op), i)
					obj := object(t, k.file, c.image, c.init, "ml")
					r := admit(t, hs.URL, reviewJSON(t, uid, k.kind, k.group, k.resource, op, "ml", obj, false))
					if string(r.UID) != uid {
						t.Errorf("%s: uid %q, want %q", c.name, r.UID, uid)
					}
					if r.Allowed != c.allowed {
						t.Errorf("%s: allowed=%v, want %v (%s)", c.name, r.Allowed, c.allowed, message(r))
					}
					if !c.allowed {
						if r.Result == nil || r.Result.Code != 403 || !strings.Contains(r.Result.Message, "secrets/test-marker") ||
							!strings.Contains(r.Result.Message, "/app/.env") {
							t.Errorf("%s: status %+v does not name the rule and file", c.name, r.Result)
						}
					}
					if c.allowed && len(r.Warnings) > 0 {
						t.Errorf("%s: warnings for a clean pinned image: %q", c.name, r.Warnings)
					}
				}
			})
		}
	}
	// Two images, each scanned once whatever the number of reviews.
	if n := sc.n.Load(); n != 2 {
		t.Errorf("scanned %d times, want 2 (one per digest)", n)
	}
}

func podObject(t *testing.T, mutate func(*corev1.Pod)) []byte {
	t.Helper()
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ml"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "IMAGE"}}},
	}
	mutate(p)
	return mustJSON(t, p)
}

func TestAdmissionPolicies(t *testing.T) {
	reg := startRegistry(t, "", "")
	good, bad := testImages(t, reg)
	goodTag := good.Context().Tag("v1").String()
	cfg, err := server.ParseConfig([]byte(`
namespaces:
  strict:
    digest: deny
    no-verdict: deny
  lenient:
    fail-on: critical
    no-verdict: warn
`))
	if err != nil {
		t.Fatal(err)
	}
	sc := newCounting()
	s, hs := startServer(t, server.WithScanner(sc), server.WithConfig(cfg))
	pod := func(ns, image string, dry bool, op string, mut func(*corev1.Pod)) *admissionv1.AdmissionResponse {
		t.Helper()
		obj := podObject(t, func(p *corev1.Pod) {
			p.Namespace = ns
			p.Spec.Containers[0].Image = image
			if mut != nil {
				mut(p)
			}
		})
		return admit(t, hs.URL, reviewJSON(t, "u-"+ns, "Pod", "", "pods", op, ns, obj, dry))
	}
	contains := func(r *admissionv1.AdmissionResponse, want string) bool {
		return strings.Contains(message(r)+strings.Join(r.Warnings, "\n"), want)
	}

	t.Run("tag warns by default and is resolved", func(t *testing.T) {
		r := pod("ml", goodTag, false, "CREATE", nil)
		if !r.Allowed || !contains(r, "not pinned by digest") {
			t.Fatalf("allowed=%v %q %q", r.Allowed, message(r), r.Warnings)
		}
		if _, err := s.Verdict(t.Context(), good); err != nil {
			t.Errorf("the tag's digest was not scanned: %v", err)
		}
	})
	t.Run("tag denied in strict namespace", func(t *testing.T) {
		r := pod("strict", goodTag, false, "CREATE", nil)
		if r.Allowed || !contains(r, "not pinned by digest") {
			t.Fatalf("allowed=%v %q", r.Allowed, message(r))
		}
	})
	t.Run("bad image allowed under fail-on critical", func(t *testing.T) {
		pod("ml", bad.String(), false, "CREATE", nil) // scans it
		r := pod("lenient", bad.String(), false, "CREATE", nil)
		if !r.Allowed || !contains(r, "below critical") {
			t.Fatalf("allowed=%v %q %q", r.Allowed, message(r), r.Warnings)
		}
	})
	t.Run("no verdict: deny, then the queued scan's verdict", func(t *testing.T) {
		d := pushImage(t, reg, "ml/fresh", "v1", map[string]string{"a.txt": "fresh"})
		r := pod("strict", d.String(), false, "CREATE", nil)
		if r.Allowed || !contains(r, "no mlwarden verdict") {
			t.Fatalf("allowed=%v %q", r.Allowed, message(r))
		}
		waitVerdict(t, s, d, 20*time.Second)
		if r := pod("strict", d.String(), false, "CREATE", nil); !r.Allowed {
			t.Fatalf("after the scan: denied: %q", message(r))
		}
	})
	t.Run("dry run starts no scan", func(t *testing.T) {
		d := pushImage(t, reg, "ml/dry", "v1", map[string]string{"a.txt": "dry"})
		before := sc.n.Load()
		r := pod("ml", d.String(), true, "CREATE", nil)
		if !r.Allowed || !contains(r, "dry run") {
			t.Fatalf("allowed=%v %q %q", r.Allowed, message(r), r.Warnings)
		}
		time.Sleep(100 * time.Millisecond)
		if sc.n.Load() != before {
			t.Errorf("a dry run started a scan")
		}
		if _, err := s.Verdict(t.Context(), d); err == nil {
			t.Errorf("a dry run wrote a verdict")
		}
	})
	t.Run("ephemeral container on UPDATE", func(t *testing.T) {
		r := pod("ml", good.String(), false, "UPDATE", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debugger", Image: bad.String()}}}
		})
		if r.Allowed || !contains(r, `"debugger"`) {
			t.Fatalf("allowed=%v %q", r.Allowed, message(r))
		}
	})
	yes := true
	for _, c := range []struct {
		name, rule string
		mut        func(*corev1.Pod)
	}{
		{"privileged", "misconfig/privileged-container", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		}},
		{"NVIDIA_VISIBLE_DEVICES without a GPU request", "misconfig/gpu-isolation-bypass", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}
		}},
		{"hostPath /dev/nvidia0", "misconfig/gpu-isolation-bypass", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "gpu", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/dev/nvidia0"}}}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := pod("ml", good.String(), false, "CREATE", c.mut)
			if r.Allowed || !contains(r, c.rule) {
				t.Fatalf("allowed=%v %q", r.Allowed, message(r))
			}
		})
	}
	t.Run("NVIDIA_VISIBLE_DEVICES with a GPU request", func(t *testing.T) {
		r := pod("ml", good.String(), false, "CREATE", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		})
		if !r.Allowed {
			t.Fatalf("denied: %q", message(r))
		}
	})
	t.Run("DELETE and other kinds pass", func(t *testing.T) {
		obj := podObject(t, func(p *corev1.Pod) { p.Spec.Containers[0].Image = bad.String() })
		if r := admit(t, hs.URL, reviewJSON(t, "del", "Pod", "", "pods", "DELETE", "ml", obj, false)); !r.Allowed {
			t.Errorf("DELETE denied: %q", message(r))
		}
		cm := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"a":"b"}}`)
		if r := admit(t, hs.URL, reviewJSON(t, "cm", "ConfigMap", "", "configmaps", "CREATE", "ml", cm, false)); !r.Allowed {
			t.Errorf("ConfigMap denied: %q", message(r))
		}
	})
	t.Run("long warnings are cut", func(t *testing.T) {
		long := reg + "/" + strings.Repeat("very-long-repository-name/", 6) + "img:v1"
		r := pod("ml", long, false, "CREATE", nil)
		if len(r.Warnings) == 0 {
			t.Fatalf("no warnings for %s", long)
		}
	})
	t.Run("bad requests", func(t *testing.T) {
		for _, body := range []string{"", "{", `{"kind":"AdmissionReview"}`} {
			resp, err := http.Post(hs.URL+"/admission", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%q: HTTP %d, want 400", body, resp.StatusCode)
			}
		}
	})
}

func TestAdmissionDeadline(t *testing.T) {
	reg := startRegistry(t, "", "")
	good, _ := testImages(t, reg)
	for _, c := range []struct {
		fallback string
		allowed  bool
	}{{"warn", true}, {"deny", false}} {
		t.Run(c.fallback, func(t *testing.T) {
			cfg, err := server.ParseConfig([]byte("scan-deadline: 300ms\nfallback: " + c.fallback + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			sc := newCounting()
			sc.delay = 2 * time.Second
			s, hs := startServer(t, server.WithScanner(sc), server.WithConfig(cfg))
			obj := podObject(t, func(p *corev1.Pod) { p.Spec.Containers[0].Image = good.String() })
			start := time.Now()
			r := admit(t, hs.URL, reviewJSON(t, "slow", "Pod", "", "pods", "CREATE", "ml", obj, false))
			if el := time.Since(start); el > 1500*time.Millisecond {
				t.Errorf("answered after %s, deadline 300ms", el)
			}
			if r.Allowed != c.allowed || !strings.Contains(message(r)+strings.Join(r.Warnings, " "), "did not finish") {
				t.Fatalf("allowed=%v %q %q", r.Allowed, message(r), r.Warnings)
			}
			// The scan goes on and its verdict serves the next review.
			waitVerdict(t, s, good, 10*time.Second)
			if r := admit(t, hs.URL, reviewJSON(t, "slow2", "Pod", "", "pods", "CREATE", "ml", obj, false)); !r.Allowed || len(r.Warnings) > 0 {
				t.Fatalf("second review: allowed=%v %q %q", r.Allowed, message(r), r.Warnings)
			}
		})
	}
}

// TestAdmissionInlineScanFails: an inline scan that fails at once is a
// failure, not a missed deadline: the answer says it failed and the image
// is not handed to the queue to be scanned again (every failure used to
// read as "did not finish within", because the deadline was checked after
// the scan's context was cancelled).
func TestAdmissionInlineScanFails(t *testing.T) {
	sc := newCounting()
	sc.fail.Store(true)
	cfg := server.DefaultConfig()
	cfg.Retries = 0
	s, _ := startServer(t, server.WithScanner(sc), server.WithConfig(cfg))
	pod := hostilePod([]string{"127.0.0.1:1/ml/x@sha256:" + strings.Repeat("ab", 32)})
	start := time.Now()
	r := review(s, pod)
	msg := message(r)
	if r.Allowed || !strings.Contains(msg, "failed") || strings.Contains(msg, "did not finish") || time.Since(start) > 2*time.Second {
		t.Errorf("allowed %v after %s: %q", r.Allowed, time.Since(start), msg)
	}
	time.Sleep(300 * time.Millisecond)
	if n := sc.n.Load(); n != 1 {
		t.Errorf("scanned %d times, want once (not handed to the queue)", n)
	}
}
