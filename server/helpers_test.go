//go:build !mlwarden_sbatch

package server_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/server"
)

// needRegistry finds Debian's docker-registry: missing, it skips the test
// locally and fails it in CI.
func needRegistry(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker-registry not installed (apt-get install docker-registry): %v", err)
		}
		t.Skipf("docker-registry not installed (apt-get install docker-registry): %v", err)
	}
	return bin
}

// startRegistry starts a docker-registry process on a free loopback port
// with its own storage and, when notify is set, a notifications endpoint
// with that URL and bearer token. It returns host:port.
func startRegistry(t testing.TB, notify, token string) string {
	t.Helper()
	bin := needRegistry(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "data"), addr)
	if notify != "" {
		cfg += fmt.Sprintf(`notifications:
  events:
    includereferences: true
  endpoints:
    - name: mlwarden
      url: %s
      headers:
        Authorization: [Bearer %s]
      timeout: 2s
      threshold: 3
      backoff: 1s
      ignoredmediatypes:
        - application/octet-stream
`, notify, token)
	}
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not answer on %s: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pushImage builds a one-layer image holding files and pushes it as
// reg/repo:tag. It returns the pushed digest reference.
func pushImage(t testing.TB, reg, repo, tag string, files map[string]string) name.Digest {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for p, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{Architecture: "amd64", OS: "linux",
		Config: v1.Config{Env: []string{"PATH=/usr/bin"}}, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(reg + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(d.String())
}

// markerCheck is a small real check for these tests: it reports every file
// that holds the marker, as a high finding. The server is tested with the
// real image source and dispatcher; the catalog's checks are tested in
// their own packages.
type markerCheck struct{}

const badMarker = "MLWARDEN-TEST-BAD-FILE"

var markerRule = scanners.Rule{ID: "secrets/test-marker", Check: scanners.CheckSecrets,
	Severity: scanners.SeverityHigh, Title: "test marker", Why: "it is a test", Fix: "remove it"}

func (markerCheck) Check() string                             { return scanners.CheckSecrets }
func (markerCheck) Rules() []scanners.Rule                    { return []scanners.Rule{markerRule} }
func (markerCheck) Wants(a *scanners.Artifact, _ []byte) bool { return a.Kind == scanners.ArtifactFile }
func (markerCheck) Scan(_ context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	b, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, []byte(badMarker)) {
		return nil, nil
	}
	return []scanners.Finding{scanners.At(a, markerRule, 1,
		"file holds the test marker: a stand-in for a leaked secret; remove it and rebuild")}, nil
}

// countingScanner counts scans and can be slowed down or made to fail.
type countingScanner struct {
	inner server.ImageScanner
	n     atomic.Int64
	delay time.Duration
	fail  atomic.Bool
}

func (c *countingScanner) ScanImage(ctx context.Context, req server.ScanRequest) (*scanners.Result, error) {
	c.n.Add(1)
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.fail.Load() {
		return nil, errors.New("scanner told to fail")
	}
	return c.inner.ScanImage(ctx, req)
}

func newCounting() *countingScanner {
	sc, err := scan.New(scan.Options{Scanners: []scanners.Scanner{markerCheck{}}, Image: image.Options{NoCache: true}})
	if err != nil {
		panic(err)
	}
	return &countingScanner{inner: server.Pipeline{Scanner: sc}}
}

// testLogger writes the server's JSON logs to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewJSONHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// loopbackRegistries allows the tests' own registries, all on loopback;
// the guard refuses loopback registries otherwise (guard_test.go).
var loopbackRegistries = []string{"127.0.0.1:*", "[::1]:*", "localhost:*"}

// startServer starts a server on a loopback httptest server; it may
// contact registries on loopback.
func startServer(t testing.TB, opts ...server.Option) (*server.Server, *httptest.Server) {
	t.Helper()
	s, err := server.New(append([]server.Option{server.WithLogger(testLogger(t)), server.WithAllowRegistries(loopbackRegistries...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.Start(ctx)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		cancel()
		sctx, c2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer c2()
		s.Close(sctx)
	})
	return s, hs
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitVerdict polls the server's store until a verdict for d appears.
func waitVerdict(t testing.TB, s *server.Server, d name.Digest, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := s.Verdict(context.Background(), d); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no verdict for %s within %s", d, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
