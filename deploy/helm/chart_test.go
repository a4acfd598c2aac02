//go:build !mlwarden_sbatch

// Package helm_test renders the mlwarden chart with the helm binary (helm
// template, as an install would) and decodes every manifest strictly into
// its Kubernetes API type: an unknown or misspelt field, a duplicate key or
// a kind the test does not know fails here rather than in a cluster.
package helm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v3"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kjson "sigs.k8s.io/json"

	"github.com/mlwarden/mlwarden/internal/integration"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/k8s"
	"github.com/mlwarden/mlwarden/server"
)

const (
	chart       = "mlwarden"
	namespace   = "mlwarden"
	release     = "mlwarden"
	kubeVersion = "1.31.0"
	// helmVersion is what .ci/run installs.
	helmVersion = "v3.22.0"
)

// helmBin finds the helm binary: $MLWARDEN_HELM, PATH, or $GOPATH/bin
// (where `go install` puts it).
func helmBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MLWARDEN_HELM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	integration.Skip(t, "helm", "no helm on PATH or in $GOPATH/bin, MLWARDEN_HELM unset",
		"go install helm.sh/helm/v3/cmd/helm@"+helmVersion)
	return ""
}

// readChart reads every file of the chart. helm reads them in another
// process, which go test's cache does not see; reading them here makes a
// change to the chart rerun the test instead of replaying a cached pass.
func readChart(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir(chart, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// render runs helm template with the extra arguments and returns stdout,
// or the error with helm's message.
func render(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	helm := helmBin(t)
	readChart(t)
	cmd := exec.Command(helm, append([]string{"template", release, chart, "--namespace", namespace, "--kube-version", kubeVersion}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	integration.Ran(t, "helm", helm)
	return stdout.Bytes(), nil
}

// manifests is one render, decoded.
type manifests struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	configMap      *corev1.ConfigMap
	serviceAccount *corev1.ServiceAccount
	pdb            *policyv1.PodDisruptionBudget
	webhook        *admissionregv1.ValidatingWebhookConfiguration
	certificate    *cmv1.Certificate
	issuer         *cmv1.Issuer
	serviceMonitor *monv1.ServiceMonitor
	// The read-only identity of k8s: scans (k8sReader.enabled).
	readerSA           *corev1.ServiceAccount
	clusterRole        *rbacv1.ClusterRole
	clusterRoleBinding *rbacv1.ClusterRoleBinding
	raw                [][]byte // each document as JSON
}

// decode splits helm's output into documents and decodes each strictly
// (sigs.k8s.io/json, as the API server does: unknown fields, duplicate
// fields and case mismatches are errors) into the type its kind names.
func decode(t *testing.T, out []byte) manifests {
	t.Helper()
	var m manifests
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		if doc == nil {
			continue
		}
		j, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(j, &tm); err != nil {
			t.Fatal(err)
		}
		var into any
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			m.deployment = &appsv1.Deployment{}
			into = m.deployment
		case "v1 Service":
			m.service = &corev1.Service{}
			into = m.service
		case "v1 ConfigMap":
			m.configMap = &corev1.ConfigMap{}
			into = m.configMap
		case "v1 ServiceAccount":
			sa := &corev1.ServiceAccount{}
			if strings.HasSuffix(nameOf(j), "-k8s-reader") {
				m.readerSA = sa
			} else {
				m.serviceAccount = sa
			}
			into = sa
		case "rbac.authorization.k8s.io/v1 ClusterRole":
			m.clusterRole = &rbacv1.ClusterRole{}
			into = m.clusterRole
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			m.clusterRoleBinding = &rbacv1.ClusterRoleBinding{}
			into = m.clusterRoleBinding
		case "policy/v1 PodDisruptionBudget":
			m.pdb = &policyv1.PodDisruptionBudget{}
			into = m.pdb
		case "admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration":
			m.webhook = &admissionregv1.ValidatingWebhookConfiguration{}
			into = m.webhook
		case "cert-manager.io/v1 Certificate":
			m.certificate = &cmv1.Certificate{}
			into = m.certificate
		case "cert-manager.io/v1 Issuer":
			m.issuer = &cmv1.Issuer{}
			into = m.issuer
		case "monitoring.coreos.com/v1 ServiceMonitor":
			m.serviceMonitor = &monv1.ServiceMonitor{}
			into = m.serviceMonitor
		default:
			t.Fatalf("rendered %s %s: a kind this test does not decode; add it", tm.APIVersion, tm.Kind)
		}
		strict, err := kjson.UnmarshalStrict(j, into)
		if err != nil {
			t.Fatalf("%s: %v", tm.Kind, err)
		}
		for _, e := range strict {
			t.Errorf("%s: %v", tm.Kind, e)
		}
		m.raw = append(m.raw, j)
	}
	if m.deployment == nil || m.service == nil || m.configMap == nil {
		t.Fatal("render has no Deployment, Service or ConfigMap")
	}
	return m
}

func TestChart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		digest bool // image pinned by digest
		cm     bool // cert-manager objects rendered
		issuer bool // the chart's own self-signed Issuer
		sm     bool // ServiceMonitor
	}{
		{name: "defaults", cm: true, issuer: true},
		{name: "all options", args: []string{"-f", filepath.Join(chart, "ci", "all-options-values.yaml")}, digest: true, cm: true, sm: true},
		{name: "own certificate", args: []string{"--set", "certManager.enabled=false", "--set", "webhook.caBundle=Q0E=", "--set", "tls.secretName=my-tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			m := decode(t, out)
			checkPod(t, m, tc.digest)
			checkConfig(t, m)
			checkWebhook(t, m, tc.cm)
			checkObjects(t, m, tc.cm, tc.issuer, tc.sm)
			for _, j := range m.raw {
				if bytes.Contains(j, []byte(":latest")) {
					t.Errorf(":latest in %s", j)
				}
			}
			checkScan(t, out, tc.digest)
		})
	}
}

func checkPod(t *testing.T, m manifests, digest bool) {
	t.Helper()
	d := m.deployment
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("deployment: want 2+ replicas")
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("deployment: selector %v does not match the pod labels %v", d.Spec.Selector, d.Spec.Template.Labels)
	}
	ps := d.Spec.Template.Spec
	if ps.HostNetwork || ps.HostPID || ps.HostIPC {
		t.Errorf("pod: host namespaces")
	}
	psc := ps.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want runAsNonRoot, a non-zero runAsUser and seccomp RuntimeDefault", psc)
	}
	for _, v := range ps.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s: hostPath", v.Name)
		}
	}
	if len(ps.Containers) != 1 || len(ps.InitContainers) != 0 {
		t.Fatalf("pod: %d containers, %d init containers; want one", len(ps.Containers), len(ps.InitContainers))
	}
	c := ps.Containers[0]
	sc := c.SecurityContext
	// Pod Security Standard "restricted", container level.
	switch {
	case sc == nil:
		t.Fatal("container: no security context")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("container: root file system not read-only")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("container: allowPrivilegeEscalation not false")
	case sc.Privileged != nil && *sc.Privileged:
		t.Error("container: privileged")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
		t.Errorf("container: capabilities %+v, want drop [ALL] and nothing added", sc.Capabilities)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Error("container: seccomp not RuntimeDefault")
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero() ||
		c.Resources.Requests.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("container: resources %+v, want requests and limits of cpu and memory", c.Resources)
	}
	if c.ReadinessProbe == nil || c.LivenessProbe == nil || c.StartupProbe == nil {
		t.Error("container: want readiness, liveness and startup probes")
	}
	args := strings.Join(c.Args, " ")
	if !strings.HasPrefix(args, "serve ") || !strings.Contains(args, "--tls-cert=") || !strings.Contains(args, "--config=/etc/mlwarden/config/config.yaml") {
		t.Errorf("container args %q: want serve with TLS and the config file", args)
	}
	if !strings.HasPrefix(c.Image, "ghcr.io/mlwarden/mlwarden:v") || strings.Contains(c.Image, ":latest") {
		t.Errorf("image %q: want a release tag", c.Image)
	}
	if got := strings.Contains(c.Image, "@sha256:"); got != digest {
		t.Errorf("image %q: pinned by digest %v, want %v", c.Image, got, digest)
	}
	// Every mount's volume exists, and / is the only read-only place
	// besides the mounted Secrets and ConfigMap.
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			t.Errorf("mount %s: no volume", vm.Name)
		}
		if (v.Secret != nil || v.ConfigMap != nil) != vm.ReadOnly {
			t.Errorf("mount %s: readOnly %v", vm.Name, vm.ReadOnly)
		}
	}
	for _, p := range []string{"/tmp", "/var/cache/mlwarden", "/var/lib/mlwarden"} {
		if !slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == p }) {
			t.Errorf("no writable volume at %s", p)
		}
	}
}

// checkConfig loads the ConfigMap's config.yaml as the server does and
// checks the deadline against the webhook's timeout.
func checkConfig(t *testing.T, m manifests) {
	t.Helper()
	data, ok := m.configMap.Data["config.yaml"]
	if !ok {
		t.Fatal("configmap: no config.yaml")
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if !server.HasServeSection([]byte(data)) {
		t.Errorf("config.yaml has no serve: section")
	}
	cfg, err := server.LoadConfig(p)
	if err != nil {
		t.Fatalf("config.yaml does not load: %v\n%s", err, data)
	}
	if m.webhook != nil {
		timeout := *m.webhook.Webhooks[0].TimeoutSeconds
		if cfg.ScanDeadline.Seconds() >= float64(timeout) || cfg.ScanDeadline <= 0 {
			t.Errorf("scan-deadline %s is not below the webhook timeout %ds", cfg.ScanDeadline, timeout)
		}
	}
	// The config file must be the one the pod mounts.
	for _, v := range m.deployment.Spec.Template.Spec.Volumes {
		if v.Name == "config" && (v.ConfigMap == nil || v.ConfigMap.Name != m.configMap.Name) {
			t.Errorf("config volume %+v is not ConfigMap %s", v, m.configMap.Name)
		}
	}
}

func checkWebhook(t *testing.T, m manifests, certManager bool) {
	t.Helper()
	if m.webhook == nil || len(m.webhook.Webhooks) != 1 {
		t.Fatal("no ValidatingWebhookConfiguration with one webhook")
	}
	w := m.webhook.Webhooks[0]
	if w.FailurePolicy == nil || w.TimeoutSeconds == nil || *w.TimeoutSeconds < 1 || *w.TimeoutSeconds > 30 ||
		w.SideEffects == nil || *w.SideEffects != admissionregv1.SideEffectClassNone || w.NamespaceSelector == nil {
		t.Errorf("webhook: want failurePolicy, timeoutSeconds in 1..30, sideEffects None and a namespace selector")
	}
	sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	own := labels.Set{"kubernetes.io/metadata.name": namespace, "mlwarden.dev/admission": "enabled", "team": "ml"}
	if sel.Matches(own) {
		t.Errorf("webhook: its own namespace is selected, even when labelled")
	}
	if !sel.Matches(labels.Set{"kubernetes.io/metadata.name": "ml-team", "mlwarden.dev/admission": "enabled", "team": "ml"}) {
		t.Errorf("webhook: an opted-in namespace is not selected by %v", w.NamespaceSelector)
	}
	svc := w.ClientConfig.Service
	if svc == nil || svc.Name != m.service.Name || svc.Namespace != namespace || svc.Path == nil || *svc.Path != "/admission" ||
		svc.Port == nil || *svc.Port != m.service.Spec.Ports[0].Port {
		t.Errorf("webhook: client config %+v does not name the Service %s", svc, m.service.Name)
	}
	ann := m.webhook.Annotations["cert-manager.io/inject-ca-from"]
	switch {
	case certManager && (m.certificate == nil || ann != namespace+"/"+m.certificate.Name):
		t.Errorf("webhook: inject-ca-from %q does not name the Certificate", ann)
	case !certManager && (ann != "" || len(w.ClientConfig.CABundle) == 0):
		t.Errorf("webhook without cert-manager: want a caBundle and no injection, got %q", ann)
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

func checkObjects(t *testing.T, m manifests, certManager, issuer, serviceMonitor bool) {
	t.Helper()
	ps := m.deployment.Spec.Template.Spec
	tlsSecret := ""
	for _, v := range ps.Volumes {
		if v.Name == "tls" && v.Secret != nil {
			tlsSecret = v.Secret.SecretName
		}
	}
	if tlsSecret == "" {
		t.Fatal("no tls Secret volume")
	}
	if (m.certificate != nil) != certManager || (m.issuer != nil) != issuer {
		t.Fatalf("Certificate %v, Issuer %v; want %v, %v", m.certificate != nil, m.issuer != nil, certManager, issuer)
	}
	if c := m.certificate; c != nil {
		if c.Spec.SecretName != tlsSecret {
			t.Errorf("certificate writes %s, the pod mounts %s", c.Spec.SecretName, tlsSecret)
		}
		dns := m.service.Name + "." + namespace + ".svc"
		if !slices.Contains(c.Spec.DNSNames, dns) {
			t.Errorf("certificate names %v, not %s", c.Spec.DNSNames, dns)
		}
		if issuer && (c.Spec.IssuerRef.Name != m.issuer.Name || c.Spec.IssuerRef.Kind != "Issuer" || m.issuer.Spec.SelfSigned == nil) {
			t.Errorf("certificate issuer %+v is not the chart's self-signed Issuer", c.Spec.IssuerRef)
		}
	}
	if (m.serviceMonitor != nil) != serviceMonitor {
		t.Fatalf("ServiceMonitor %v, want %v", m.serviceMonitor != nil, serviceMonitor)
	}
	if sm := m.serviceMonitor; sm != nil {
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(m.service.Labels)) {
			t.Errorf("servicemonitor selector %v does not match the Service's labels", sm.Spec.Selector)
		}
		e := sm.Spec.Endpoints[0]
		if e.Port != m.service.Spec.Ports[0].Name || e.Path != "/metrics" || strings.ToLower(e.Scheme) != "https" {
			t.Errorf("servicemonitor endpoint %+v: want /metrics over https on the Service's port", e)
		}
	}
	if m.pdb == nil || m.pdb.Spec.MinAvailable == nil || m.pdb.Spec.MinAvailable.IntValue() < 1 ||
		m.pdb.Spec.MinAvailable.IntValue() >= int(*m.deployment.Spec.Replicas) {
		t.Errorf("pdb: want minAvailable at least 1 and below the replicas")
	} else if sel, err := metav1.LabelSelectorAsSelector(m.pdb.Spec.Selector); err != nil || !sel.Matches(labels.Set(m.deployment.Spec.Template.Labels)) {
		t.Errorf("pdb selector does not match the pods")
	}
	if sel := labels.SelectorFromSet(m.service.Spec.Selector); !sel.Matches(labels.Set(m.deployment.Spec.Template.Labels)) {
		t.Errorf("service selector does not match the pods")
	}
	if m.serviceAccount == nil || m.serviceAccount.Name != ps.ServiceAccountName ||
		m.serviceAccount.AutomountServiceAccountToken == nil || *m.serviceAccount.AutomountServiceAccountToken {
		t.Errorf("service account: want %s without a mounted token", ps.ServiceAccountName)
	}
}

// checkScan runs mlwarden's pins and misconfig checks over the rendered
// manifests: nothing but the image by tag when no digest is set.
func checkScan(t *testing.T, out []byte, digest bool) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rendered.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scan.New(scan.Options{Checks: []string{"pins", "misconfig", "secrets"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), scan.Target{Ref: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Errors {
		t.Errorf("scan: %s: %s", e.Path, e.Message)
	}
	tagged := 0
	for _, f := range res.Findings {
		if f.RuleID == "pins/image-not-digest" && !digest {
			tagged++
			continue
		}
		t.Errorf("rendered.yaml:%d: %s: %s", f.Line, f.RuleID, f.Message)
	}
	if !digest && tagged != 1 {
		t.Errorf("%d pins/image-not-digest findings for the image by tag, want 1", tagged)
	}
}

// TestChartRefuses: values the chart must refuse rather than render.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"image.tag=latest", "latest is refused"},
		{"image.digest=sha256:abc", "is not sha256:<64 hex digits>"},
		{"redis.enabled=true", "set exactly one of redis.url and redis.existingSecret"},
		{"redis.enabled=true,redis.url=redis://:pw@valkey:6379", "without a password"},
		{"redis.enabled=true,redis.url=valkey:6379", "want redis://HOST:PORT"},
		{"certManager.enabled=false", "webhook.caBundle"},
		{"webhook.timeoutSeconds=3", "at least 4"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := render(t, "--set", tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--set %s: got %v, want an error with %q", tc.set, err, tc.want)
			}
		})
	}
}

// TestDecodeStrict makes sure the decoding above fails on what it must:
// an unknown field and a misspelt one.
func TestDecodeStrict(t *testing.T) {
	for _, doc := range []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1,"replica":2}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"Replicas":1}}`,
	} {
		strict, err := kjson.UnmarshalStrict([]byte(doc), &appsv1.Deployment{})
		if err == nil && len(strict) == 0 {
			t.Errorf("%s decoded without an error", doc)
		}
	}
}

// TestChartRedis: with redis.enabled, every replica gets the shared cache
// as MLWARDEN_CACHE_BACKEND — from url (with the CA mounted and named), or
// from a Secret that holds the URL with its password.
func TestChartRedis(t *testing.T) {
	for _, tc := range []struct {
		args              []string
		value, secret, ca string
	}{
		{args: []string{"-f", filepath.Join(chart, "ci", "all-options-values.yaml")},
			value: "rediss://valkey.mlwarden.svc:6380/0?ca=/etc/mlwarden/redis-ca/ca.crt", ca: "valkey-ca"},
		{args: []string{"--set", "redis.enabled=true,redis.existingSecret=cache-url"}, secret: "cache-url"},
		{args: []string{"--set", "redis.enabled=true,redis.url=redis://valkey:6379"}, value: "redis://valkey:6379"},
	} {
		out, err := render(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		m := decode(t, out)
		pod := m.deployment.Spec.Template.Spec
		c := pod.Containers[0]
		var found bool
		for _, e := range c.Env {
			if e.Name != "MLWARDEN_CACHE_BACKEND" {
				continue
			}
			found = true
			switch {
			case tc.secret != "":
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != tc.secret || e.ValueFrom.SecretKeyRef.Key != "url" {
					t.Errorf("%v: env %+v", tc.args, e)
				}
			case e.Value != tc.value:
				t.Errorf("%v: MLWARDEN_CACHE_BACKEND=%q, want %q", tc.args, e.Value, tc.value)
			}
		}
		if !found {
			t.Errorf("%v: no MLWARDEN_CACHE_BACKEND", tc.args)
		}
		mounted := false
		for _, v := range pod.Volumes {
			mounted = mounted || (v.Secret != nil && v.Secret.SecretName == tc.ca && tc.ca != "")
		}
		if (tc.ca != "") != mounted {
			t.Errorf("%v: CA secret mounted %v, want %v", tc.args, mounted, tc.ca != "")
		}
	}
	out, err := render(t)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("MLWARDEN_CACHE_BACKEND")) {
		t.Error("redis disabled, but the pods get a cache backend")
	}
}

// TestChartHarborAndAllowList: harbor.existingSecret mounts the token and
// points serve.harbor.token-file at it (the adapter is served only with a
// token), unless serve.harbor is set; the allow-list reaches the config.
func TestChartHarborAndAllowList(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		tokenFile string
		secret    string
		allow     []string
	}{
		{args: nil},
		{args: []string{"--set", "harbor.existingSecret=harbor-token"}, tokenFile: "/etc/mlwarden/harbor/token", secret: "harbor-token"},
		{args: []string{"--set", "harbor.existingSecret=harbor-token,config.serve.harbor.token-env=HARBOR_TOKEN"}, secret: "harbor-token"},
		{args: []string{"-f", filepath.Join(chart, "ci", "all-options-values.yaml")}, tokenFile: "/etc/mlwarden/harbor/token", secret: "mlwarden-harbor",
			allow: []string{"registry.ml.svc.cluster.local:5000", "*.registry.corp.example", "10.20.0.5:*"}},
	} {
		out, err := render(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		m := decode(t, out)
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte(m.configMap.Data["config.yaml"]), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := server.LoadConfig(p)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if cfg.Harbor.TokenFile != tc.tokenFile || !slices.Equal(cfg.AllowRegistries, tc.allow) {
			t.Errorf("%v: harbor %+v, allow_registries %q", tc.args, cfg.Harbor, cfg.AllowRegistries)
		}
		pod := m.deployment.Spec.Template.Spec
		mounted := slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(vm corev1.VolumeMount) bool {
			return vm.Name == "harbor" && vm.MountPath == "/etc/mlwarden/harbor" && vm.ReadOnly
		})
		vol := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
			return v.Name == "harbor" && v.Secret != nil && v.Secret.SecretName == tc.secret
		})
		if want := tc.secret != ""; mounted != want || vol != want {
			t.Errorf("%v: harbor secret mounted %v, volume %v, want %v", tc.args, mounted, vol, want)
		}
	}
}

// nameOf is a rendered document's metadata.name.
func nameOf(j []byte) string {
	var o struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	json.Unmarshal(j, &o)
	return o.Metadata.Name
}

// TestChartK8sReader: k8sReader.enabled renders a ServiceAccount, a
// ClusterRole granting get, list and watch on exactly what a k8s: target
// reads (k8s.ReadRules, which the live-cluster test proves enough), and
// the binding of one to the other; off by default.
func TestChartK8sReader(t *testing.T) {
	out, err := render(t)
	if err != nil {
		t.Fatal(err)
	}
	if m := decode(t, out); m.clusterRole != nil || m.clusterRoleBinding != nil || m.readerSA != nil {
		t.Fatal("the k8s reader is rendered by default")
	}
	out, err = render(t, "-f", filepath.Join(chart, "ci", "all-options-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, out)
	if m.clusterRole == nil || m.clusterRoleBinding == nil || m.readerSA == nil {
		t.Fatal("k8sReader.enabled: no ClusterRole, ClusterRoleBinding or ServiceAccount")
	}
	type grant struct{ group, resource, verb string }
	set := func(rules []rbacv1.PolicyRule) []grant {
		var g []grant
		for _, r := range rules {
			if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
				t.Errorf("rule %+v: want whole resources only", r)
			}
			for _, gr := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						g = append(g, grant{gr, res, v})
					}
				}
			}
		}
		slices.SortFunc(g, func(a, b grant) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		return g
	}
	if got, want := set(m.clusterRole.Rules), set(k8s.ReadRules()); !slices.Equal(got, want) {
		t.Errorf("ClusterRole grants\n%v\nwant exactly\n%v", got, want)
	}
	b := m.clusterRoleBinding
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != m.clusterRole.Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != m.readerSA.Name || b.Subjects[0].Namespace != namespace {
		t.Errorf("binding %+v does not bind %s to service account %s/%s", b, m.clusterRole.Name, namespace, m.readerSA.Name)
	}
}
