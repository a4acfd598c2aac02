//go:build !mlwarden_sbatch

package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mlwarden/mlwarden/server"
)

// TestReload swaps the admission policy of a running server: a privileged
// Pod denied under fail-on high is admitted once the config says critical;
// an invalid config changes nothing; settings that need a restart are named.
func TestReload(t *testing.T) {
	// No scanner: the image gets the fallback, warn here so that the Pod's
	// own rules decide.
	warn, err := server.ParseConfig([]byte("fallback: warn\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.WithConfig(warn))
	if err != nil {
		t.Fatal(err)
	}
	privileged := true
	obj := podObject(t, func(p *corev1.Pod) {
		p.Spec.Containers[0].Image = "registry.example.test/ml/train@sha256:" + strings.Repeat("a", 64)
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
	})
	review := func() *admissionv1.AdmissionResponse {
		return s.Review(context.Background(), &admissionv1.AdmissionRequest{
			UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "ml",
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: obj},
		})
	}
	if r := review(); r.Allowed {
		t.Fatalf("privileged pod admitted under the default policy: %q", r.Warnings)
	}
	lenient, err := server.ParseConfig([]byte("fail-on: critical\nfallback: warn\nworkers: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	restart, err := s.Reload(lenient, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(restart, "workers") {
		t.Errorf("restart = %q, want workers named", restart)
	}
	if r := review(); !r.Allowed {
		t.Fatalf("denied after reloading fail-on critical: %s", message(r))
	}
	bad := lenient
	bad.FailOn = "sometimes"
	if _, err := s.Reload(bad, nil); err == nil {
		t.Fatal("an invalid config was accepted")
	}
	if r := review(); !r.Allowed {
		t.Fatalf("a rejected reload changed the policy: %s", message(r))
	}
}
