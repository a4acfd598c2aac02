//go:build !mlwarden_sbatch

// Package e2e_test runs the server with the real checks (the catalog), the
// real image source and a real registry: a pushed image with a leaked token
// gets a verdict through the push listener and is denied at admission.
package e2e_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/server"
)

const token = "e2e-events-token"

// fakeHFToken makes a token in the Hugging Face format from a seed at test
// time, so that no credential-shaped string is committed.
func fakeHFToken() string {
	r := rand.New(rand.NewPCG(10, 10))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := []byte("hf_")
	for range 34 {
		b = append(b, letters[r.IntN(len(letters))])
	}
	return string(b)
}

func startRegistry(t *testing.T, notify string) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker-registry not installed: %v", err)
		}
		t.Skipf("docker-registry not installed: %v", err)
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := fmt.Sprintf(`version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: %s}}
http: {addr: %s}
notifications:
  endpoints:
    - name: mlwarden
      url: %s
      headers: {Authorization: [Bearer %s]}
      timeout: 2s
      threshold: 3
      backoff: 1s
      ignoredmediatypes: [application/octet-stream]
`, filepath.Join(dir, "data"), addr, notify, token)
	p := filepath.Join(dir, "config.yml")
	os.WriteFile(p, []byte(cfg), 0o600)
	cmd := exec.Command(bin, "serve", p)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if resp, err := http.Get("http://" + addr + "/v2/"); err == nil {
			resp.Body.Close()
			return addr
		}
		if i > 300 {
			t.Fatal("registry did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func push(t *testing.T, ref string, files map[string]string) name.Digest {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for p, data := range files {
		tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write([]byte(data))
	}
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return tag.Context().Digest(d.String())
}

func TestPushThenAdmit(t *testing.T) {
	sc, err := scan.New(scan.Options{Image: image.Options{NoCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.Events.Token = token
	cfg.NoVerdict = server.Deny // the verdict must come from the push
	s, err := server.New(server.WithConfig(cfg),
		server.WithScanner(server.Pipeline{Scanner: sc}),
		server.WithRulesVersion(sc.RulesVersion()),
		server.WithAllowRegistries("127.0.0.1:*")) // the test's registry is on loopback
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	reg := startRegistry(t, hs.URL+"/registry/events")

	leaky := push(t, reg+"/ml/leaky:v1", map[string]string{"app/config.py": "HF_TOKEN = \"" + fakeHFToken() + "\"\n"})
	clean := push(t, reg+"/ml/clean:v1", map[string]string{"app/train.py": "print('hello')\n"})
	for _, d := range []name.Digest{leaky, clean} {
		deadline := time.Now().Add(60 * time.Second)
		for {
			if _, err := s.Verdict(ctx, d); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no verdict for %s", d)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, c := range []struct {
		d       name.Digest
		allowed bool
	}{{leaky, false}, {clean, true}} {
		body, _ := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"request": map[string]any{"uid": "e2e", "kind": map[string]string{"group": "", "version": "v1", "kind": "Pod"},
				"operation": "CREATE", "namespace": "ml",
				"object": map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]string{"name": "p"},
					"spec": map[string]any{"containers": []map[string]string{{"name": "main", "image": c.d.String()}}}}}})
		resp, err := http.Post(hs.URL+"/admission", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var rev admissionv1.AdmissionReview
		json.NewDecoder(resp.Body).Decode(&rev)
		resp.Body.Close()
		msg := ""
		if rev.Response.Result != nil {
			msg = rev.Response.Result.Message
		}
		t.Logf("%s: allowed=%v %s %q", c.d.Context().RepositoryStr(), rev.Response.Allowed, msg, rev.Response.Warnings)
		if rev.Response.Allowed != c.allowed {
			t.Errorf("%s: allowed=%v, want %v", c.d, rev.Response.Allowed, c.allowed)
		}
		if !c.allowed && (!strings.Contains(msg, "secrets/") || strings.Contains(msg, fakeHFToken())) {
			t.Errorf("denial does not name the secrets rule, or shows the token: %s", msg)
		}
	}
}
