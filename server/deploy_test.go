//go:build !mlwarden_sbatch

package server_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/mlwarden/mlwarden/server"
)

// decodeStrict reads a YAML manifest into a Kubernetes type, refusing
// unknown fields, so that a typo in deploy/ fails here and not in a cluster.
func decodeStrict(t *testing.T, path string, out any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestDeployManifests(t *testing.T) {
	base := filepath.Join("..", "deploy", "kubernetes", "base")
	if _, err := server.LoadConfig(filepath.Join(base, "config.yaml")); err != nil {
		t.Errorf("config.yaml: %v", err)
	}

	var d appsv1.Deployment
	decodeStrict(t, filepath.Join(base, "deployment.yaml"), &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("deployment: want 2+ replicas")
	}
	c := d.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		d.Spec.Template.Spec.SecurityContext.RunAsNonRoot == nil || !*d.Spec.Template.Spec.SecurityContext.RunAsNonRoot {
		t.Errorf("deployment: want non-root and a read-only root filesystem")
	}
	if c.ReadinessProbe == nil || c.LivenessProbe == nil || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("deployment: want probes and resource requests")
	}
	if !strings.Contains(strings.Join(c.Args, " "), "--tls-cert") {
		t.Errorf("deployment: serve without TLS")
	}

	var svc corev1.Service
	decodeStrict(t, filepath.Join(base, "service.yaml"), &svc)
	var pdb policyv1.PodDisruptionBudget
	decodeStrict(t, filepath.Join(base, "pdb.yaml"), &pdb)

	var wh admissionregv1.ValidatingWebhookConfiguration
	decodeStrict(t, filepath.Join(base, "webhook.yaml"), &wh)
	w := wh.Webhooks[0]
	if w.FailurePolicy == nil || w.TimeoutSeconds == nil || w.SideEffects == nil ||
		*w.SideEffects != admissionregv1.SideEffectClassNone || w.NamespaceSelector == nil {
		t.Errorf("webhook: want failurePolicy, timeoutSeconds, sideEffects None and a namespace selector")
	}
	cfg, _ := server.LoadConfig(filepath.Join(base, "config.yaml"))
	if cfg.ScanDeadline.Seconds() >= float64(*w.TimeoutSeconds) {
		t.Errorf("scan-deadline %s is not below the webhook timeout %ds", cfg.ScanDeadline, *w.TimeoutSeconds)
	}
	kinds := map[string]bool{}
	for _, r := range w.Rules {
		for _, res := range r.Resources {
			kinds[res] = true
		}
	}
	for _, want := range []string{"pods", "deployments", "statefulsets", "daemonsets", "replicasets", "jobs", "cronjobs"} {
		if !kinds[want] {
			t.Errorf("webhook does not match %s", want)
		}
	}
}
