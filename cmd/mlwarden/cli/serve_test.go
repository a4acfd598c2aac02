//go:build !mlwarden_sbatch

package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mlwarden/mlwarden/server"
)

// TestServeReloadOnHangup sends the process SIGHUP after editing the config
// file: the running server takes the new policy; a broken file is logged
// and leaves it.
func TestServeReloadOnHangup(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "serve.yaml")
	// No scanner: the image gets the fallback, warn here so that the Pod's
	// own rules decide.
	os.WriteFile(cfgFile, []byte("fail-on: high\nfallback: warn\n"), 0o644)
	cfg, err := server.LoadConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	load := func() (server.Config, server.SignatureVerifier, error) {
		cfg, err := server.LoadConfig(cfgFile)
		return cfg, nil, err
	}
	stop := reloadOnHangup(ctx, srv, slog.New(slog.NewJSONHandler(&logs, nil)), cfgFile, load)
	defer stop()

	pod := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"m",` +
		`"image":"registry.example.test/ml/train@sha256:` + strings.Repeat("b", 64) + `","securityContext":{"privileged":true}}]}}`)
	allowed := func() bool {
		return srv.Review(ctx, &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: "ml", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: pod}}).Allowed
	}
	hangup := func(wantLog string) {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), wantLog); {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", wantLog, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if allowed() {
		t.Fatal("privileged pod admitted under fail-on high")
	}
	os.WriteFile(cfgFile, []byte("fail-on: critical\nfallback: warn\n"), 0o644)
	hangup("config reloaded")
	if !allowed() {
		t.Fatal("still denied after reloading fail-on critical")
	}
	os.WriteFile(cfgFile, []byte("fail-on: [\n"), 0o644)
	hangup("config not reloaded")
	if !allowed() {
		t.Fatal("a broken config changed the running policy")
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServeRefusesOpenSettings (issue 37, items 22 and 23): an allow-list
// entry that is no registry, or allows every host, and a Harbor token
// source that gives no token stop serve at startup (exit 2), naming what.
func TestServeRefusesOpenSettings(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, yaml string
		args       []string
		want       string
	}{
		{name: "flag not a host", args: []string{"--allow-registry", "http://registry.example"}, want: "allow"},
		{name: "flag every host", args: []string{"--allow-registry", "*"}, want: "allows every host"},
		{name: "config every host", yaml: "serve:\n  allow_registries: ['*']\n", want: "allow_registries"},
		{name: "harbor token unset", yaml: "serve:\n  harbor:\n    token-env: MLWARDEN_TEST_HARBOR_TOKEN_UNSET\n", want: "harbor"},
	} {
		args := append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...)
		if tc.yaml != "" {
			cfg := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			os.WriteFile(cfg, []byte(tc.yaml), 0o644)
			args = append(args, "--config", cfg)
		}
		code, _, errOut := run(t, "", args...)
		if code != ExitError || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.name, code, errOut, tc.want)
		}
	}
}
