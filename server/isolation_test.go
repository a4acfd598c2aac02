//go:build !mlwarden_sbatch

package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mlwarden/mlwarden/server"
)

// TestAdmissionIsolation: the GPU pod isolation rules are enforced only
// in namespaces whose policy opts in (isolation: deny or warn), with the
// misconfig check's rule IDs; pods without GPUs and clean GPU pods pass.
func TestAdmissionIsolation(t *testing.T) {
	// No scanner: images get the fallback, warn here so that the Pod's
	// own rules decide.
	cfg, err := server.ParseConfig([]byte("fallback: warn\nnamespaces:\n  tenants: {isolation: deny}\n  labs: {isolation: warn}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.WithConfig(cfg), server.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	review := func(ns string, mut func(*corev1.Pod)) *admissionv1.AdmissionResponse {
		p := corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns},
			// A digest that no store knows and no scanner: the image part
			// only warns.
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "train",
				Image:     "registry.invalid/ml/train@sha256:0000000000000000000000000000000000000000000000000000000000000000",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		}
		if mut != nil {
			mut(&p)
		}
		raw, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		return s.Review(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: ns, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}})
	}
	hostPID := func(p *corev1.Pod) { p.Spec.HostPID = true }
	sock := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "sock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/docker.sock"}}}}
	}
	noGPU := func(p *corev1.Pod) {
		p.Spec.HostPID = true
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	}
	warned := func(r *admissionv1.AdmissionResponse, rule string) bool {
		for _, w := range r.Warnings {
			if strings.Contains(w, rule) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		name, ns string
		mut      func(*corev1.Pod)
		denied   bool
		warnRule string
	}{
		{"hostPID in an opted-in namespace", "tenants", hostPID, true, ""},
		{"runtime socket in an opted-in namespace", "tenants", sock, true, ""},
		{"clean GPU pod in an opted-in namespace", "tenants", nil, false, ""},
		{"hostPID without a GPU in an opted-in namespace", "tenants", noGPU, false, ""},
		{"hostPID in a warning namespace", "labs", hostPID, false, "misconfig/gpu-pod-host-namespace"},
		{"hostPID in a namespace that did not opt in", "default", hostPID, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := review(c.ns, c.mut)
			if r.Allowed == c.denied {
				t.Fatalf("allowed=%v: %q %v", r.Allowed, message(r), r.Warnings)
			}
			if c.denied && !strings.Contains(message(r), "misconfig/gpu-pod-host-") {
				t.Errorf("denial without the rule: %q", message(r))
			}
			if c.warnRule != "" && !warned(r, c.warnRule) {
				t.Errorf("no %s warning: %v", c.warnRule, r.Warnings)
			}
			if c.warnRule == "" && !c.denied && (warned(r, "gpu-pod-host-namespace") || warned(r, "gpu-pod-host-path")) {
				t.Errorf("isolation warning where none was asked for: %v", r.Warnings)
			}
		})
	}
	if _, err := server.ParseConfig([]byte("isolation: maybe\n")); err == nil {
		t.Error("isolation: maybe accepted")
	}
	if len(server.IsolationRules()) != 2 {
		t.Error("IsolationRules")
	}
}
