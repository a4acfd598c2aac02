//go:build !mlwarden_sbatch

package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/server"
)

// Issue 37, items 22, 23 and 25: the webhook and the Harbor adapter as a
// probe of the cluster's own network, and one review that fans out to a
// connection per image. Every listener here is on 127.0.0.1; the other
// internal addresses (private, link-local, metadata) are refused before
// any connection, which guard_internal_test.go checks with a dialer that
// records attempts and never connects.

// internalSecret is what the "internal service" answers with: it must
// never come back to a requester.
const internalSecret = "INTERNAL-SERVICE-BODY-5f1e"

// internalService is a loopback stand-in for a cloud metadata endpoint or
// an internal service: every request gets 403 and a body holding
// internalSecret (as transport.Error's text would carry it). It counts the
// connections it is sent and the requests in flight at once; delay holds
// each request.
type internalService struct {
	*httptest.Server
	conns    atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64
}

func newInternalService(t *testing.T, tlsToo bool, delay time.Duration) *internalService {
	t.Helper()
	s := &internalService{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			p := s.peak.Load()
			if n <= p || s.peak.CompareAndSwap(p, n) {
				break
			}
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "%s: the instance role's credentials\n", internalSecret)
	})
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if tlsToo {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *internalService) hostPort() string {
	return strings.TrimPrefix(strings.TrimPrefix(s.URL, "http://"), "https://")
}

// hostilePod is a Pod whose containers run images (the generator of these
// tests: any number, any names).
func hostilePod(images []string) []byte {
	type c struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	}
	cs := make([]c, len(images))
	for i, im := range images {
		cs[i] = c{Name: fmt.Sprintf("c%d", i), Image: im}
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]string{"name": "p", "namespace": "ml"}, "spec": map[string]any{"containers": cs}})
	if err != nil {
		panic(err)
	}
	return b
}

func review(s *server.Server, pod []byte) *admissionv1.AdmissionResponse {
	return s.Review(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "ml", Operation: admissionv1.Create, Object: kruntime.RawExtension{Raw: pod}})
}

// loopbackOnly wraps the guard's dial with the tests' own fence: an
// address that is not literally on loopback is refused (and counted) before
// any lookup or connection, whatever the code under test does — so that
// these tests, run on code without the guard to see them fail, still send
// nothing beyond this machine.
func loopbackOnly(g *server.RegistryGuard) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" && host != "::1" && host != "localhost" {
			fenced.Add(1)
			return nil, fmt.Errorf("test fence: %s is not on loopback", addr)
		}
		return g.DialContext(ctx, network, addr)
	}
}

// fenced counts the dials loopbackOnly refused.
var fenced atomic.Int64

// fencedTransport is the server's own registry transport in these tests:
// the guard's, behind loopbackOnly.
func fencedTransport(g *server.RegistryGuard) http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = loopbackOnly(g)
	return t
}

// guardedScanner is the scan pipeline as serve builds it: the image
// source dials through the server's guard (behind the tests' fence).
func guardedScanner(t *testing.T, g *server.RegistryGuard) server.ImageScanner {
	t.Helper()
	sc, err := scan.New(scan.Options{Scanners: []scanners.Scanner{markerCheck{}}, Image: image.Options{NoCache: true, Dial: loopbackOnly(g)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	return server.Pipeline{Scanner: sc}
}

func newGuardedServer(t *testing.T, cfg server.Config, allow ...string) *server.Server {
	t.Helper()
	g, err := server.NewRegistryGuard(allow)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.WithConfig(cfg), server.WithLogger(testLogger(t)), server.WithRegistryGuard(g), server.WithScanner(guardedScanner(t, g)),
		server.WithRemoteOptions(remote.WithTransport(fencedTransport(g))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.Start(ctx)
	t.Cleanup(func() {
		cancel()
		sctx, c2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer c2()
		s.Close(sctx)
	})
	return s
}

const zeroDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// TestAdmissionSSRFRefused (item 22): images on loopback, by every
// spelling, are refused without a connection, and the answer holds nothing
// the internal service sent.
func TestAdmissionSSRFRefused(t *testing.T) {
	svc := newInternalService(t, false, 0)
	_, port, _ := net.SplitHostPort(svc.hostPort())
	cfg := server.DefaultConfig()
	cfg.Retries = 0
	s := newGuardedServer(t, cfg)
	for _, img := range []string{
		"127.0.0.1:" + port + "/latest/meta-data:v1",
		"127.0.0.1:" + port + "/x@" + zeroDigest,
		"localhost:" + port + "/x:v1",
		"127.1:" + port + "/x:v1",
		"2130706433:" + port + "/x:v1", // 127.0.0.1 in decimal
		"0177.0.0.1:" + port + "/x:v1",
		"[::ffff:127.0.0.1]:" + port + "/x:v1",
		"169.254.169.254/latest/meta-data:v1",
		"169.254.169.254:80/x@" + zeroDigest,
		"[fd00:ec2::254]/x:v1",
		"10.0.0.1:5000/x:v1",
	} {
		t.Run(img, func(t *testing.T) {
			r := review(s, hostilePod([]string{img}))
			msg := message(r)
			if r.Allowed || !strings.Contains(msg, "is not allowed") || strings.Contains(msg, internalSecret) {
				t.Errorf("allowed %v: %q", r.Allowed, msg)
			}
		})
	}
	if n := svc.conns.Load(); n != 0 {
		t.Errorf("the internal service got %d connections", n)
	}
	if n := fenced.Load(); n != 0 {
		t.Errorf("%d dials went past the guard to a non-loopback address (stopped by the test's fence)", n)
	}
}

// TestAdmissionPortsAlike (item 22): a registry the operator allowed that
// turns out to be an open HTTP port, a closed port, a TLS port or a port
// that never answers gets the same answer, without the body.
func TestAdmissionPortsAlike(t *testing.T) {
	open := newInternalService(t, false, 0)
	tlsPort := newInternalService(t, true, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	hang, err := net.Listen("tcp", "127.0.0.1:0") // accepts (backlog), never answers
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	cfg := server.DefaultConfig()
	cfg.Retries = 0
	cfg.ScanDeadline = 2 * time.Second
	s := newGuardedServer(t, cfg, "127.0.0.1:*")
	for _, pinned := range []bool{false, true} {
		msgs := map[string]string{}
		i := 0
		for what, hp := range map[string]string{"open": open.hostPort(), "closed": closed, "tls": tlsPort.hostPort(), "silent": hang.Addr().String()} {
			// A digest of its own for each, as scans and verdicts are
			// shared by digest.
			ref := ":v1"
			if pinned {
				i++
				ref = fmt.Sprintf("@sha256:%064x", i)
			}
			r := review(s, hostilePod([]string{hp + "/probe" + ref}))
			msg := message(r)
			if r.Allowed || strings.Contains(msg, internalSecret) {
				t.Errorf("%s %s: allowed %v: %q", what, ref, r.Allowed, msg)
			}
			msgs[what] = regexp.MustCompile(`@sha256:[0-9a-f]+`).ReplaceAllString(strings.ReplaceAll(msg, hp, "HOST:PORT"), "@DIGEST")
		}
		if open.conns.Load() == 0 {
			t.Errorf("the allowed registry was not contacted")
		}
		// A port that never answers is told apart by the time it takes
		// (the deadline), not by the text.
		first := msgs["open"]
		for what, m := range msgs {
			if m != first && !(what == "silent" && strings.Contains(m, "did not finish")) {
				t.Errorf("pinned %v: the answers tell the ports apart:\n open:  %q\n %s: %q", pinned, first, what, m)
			}
		}
	}
}

// TestHarborAdapterClosed (item 23): without a token the adapter scans
// nothing, and a token source that gives none stops the server at
// startup.
func TestHarborAdapterClosed(t *testing.T) {
	svc := newInternalService(t, false, 0)
	g, _ := server.NewRegistryGuard(nil)
	_, hs := startServer(t, server.WithScanner(guardedScanner(t, g)), server.WithRemoteOptions(remote.WithTransport(fencedTransport(g))))
	body := mustJSON(t, map[string]any{
		"registry": map[string]string{"url": "http://" + svc.hostPort()},
		"artifact": map[string]string{"repository": "x", "digest": zeroDigest},
	})
	h := newHarborClient(t, hs.URL)
	for _, p := range []struct{ method, path string }{{"POST", "/api/v1/scan"}, {"GET", "/api/v1/metadata"}} {
		resp, data := h.do(p.method, p.path, "", server.HarborScanRequestMIME, body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), "serve.harbor.token") {
			t.Errorf("%s %s without a token: HTTP %d %s", p.method, p.path, resp.StatusCode, data)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := svc.conns.Load(); n != 0 {
		t.Errorf("the registry the request named got %d connections", n)
	}

	for _, tok := range []server.TokenSource{{TokenEnv: "MLWARDEN_TEST_UNSET_HARBOR_TOKEN"}, {TokenFile: writeTemp(t, " \n")}} {
		cfg := server.DefaultConfig()
		cfg.Harbor.TokenSource = tok
		if _, err := server.New(server.WithConfig(cfg)); err == nil || !strings.Contains(err.Error(), "harbor") {
			t.Errorf("harbor %+v: New err %v, want a startup error naming harbor", tok, err)
		}
	}
}

func writeTemp(t *testing.T, data string) string {
	t.Helper()
	p := t.TempDir() + "/token"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHarborAdapterGuarded (item 23): with the token, the registry Harbor
// names must pass the guard, http:// is for allowed registries only, and a
// failed scan's report says nothing the registry sent.
func TestHarborAdapterGuarded(t *testing.T) {
	svc := newInternalService(t, false, 0)
	scanReq := func(url string) []byte {
		return mustJSON(t, map[string]any{
			"registry": map[string]string{"url": url},
			"artifact": map[string]string{"repository": "x", "digest": zeroDigest},
		})
	}
	post := func(h *harborClient, body []byte, auth bool) (int, string) {
		h.token = ""
		if auth {
			h.token = harborToken
		}
		resp, data := h.do("POST", "/api/v1/scan", "", server.HarborScanRequestMIME, body)
		return resp.StatusCode, string(data)
	}

	cfg := harborConfig()
	cfg.Retries = 0
	g, _ := server.NewRegistryGuard(nil)
	_, hs := startServerNoAllow(t, server.WithConfig(cfg), server.WithRegistryGuard(g), server.WithScanner(guardedScanner(t, g)),
		server.WithRemoteOptions(remote.WithTransport(fencedTransport(g))))
	h := newHarborClient(t, hs.URL)
	if code, data := post(h, scanReq("http://"+svc.hostPort()), false); code != http.StatusUnauthorized {
		t.Errorf("no credentials: HTTP %d %s", code, data)
	}
	for _, u := range []string{"http://" + svc.hostPort(), "https://" + svc.hostPort(), "https://169.254.169.254", "http://[::ffff:169.254.169.254]", "http://registry.example", "ftp://registry.example"} {
		if code, data := post(h, scanReq(u), true); code != http.StatusUnprocessableEntity || strings.Contains(data, internalSecret) {
			t.Errorf("%s: HTTP %d %s", u, code, data)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := svc.conns.Load(); n != 0 {
		t.Errorf("refused registries: the internal service got %d connections", n)
	}

	// Allowed: scanned, fails, and the report does not reflect the body.
	g2, _ := server.NewRegistryGuard([]string{svc.hostPort()})
	_, hs2 := startServerNoAllow(t, server.WithConfig(cfg), server.WithRegistryGuard(g2), server.WithScanner(guardedScanner(t, g2)),
		server.WithRemoteOptions(remote.WithTransport(fencedTransport(g2))))
	h2 := newHarborClient(t, hs2.URL)
	code, data := post(h2, scanReq("http://"+svc.hostPort()), true)
	if code != http.StatusAccepted {
		t.Fatalf("allowed registry: HTTP %d %s", code, data)
	}
	var id struct{ ID string }
	json.Unmarshal([]byte(data), &id)
	h2.token = harborToken
	resp, rep, _ := h2.report(id.ID, "")
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(rep), internalSecret) {
		t.Errorf("report of a failed scan: HTTP %d %s", resp.StatusCode, rep)
	}
	if svc.conns.Load() == 0 {
		t.Error("the allowed registry was not contacted")
	}
}

// startServerNoAllow is startServer without the tests' loopback
// allow-list.
func startServerNoAllow(t *testing.T, opts ...server.Option) (*server.Server, *httptest.Server) {
	t.Helper()
	s, err := server.New(append([]server.Option{server.WithLogger(testLogger(t))}, opts...)...)
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

// TestAdmissionFanOut (item 25): a review with 20,000 distinct images is
// denied at once with a short message and no connection; one within the
// bound asks the registry for at most a few images at a time, and its
// denial is capped as warnings are.
func TestAdmissionFanOut(t *testing.T) {
	svc := newInternalService(t, false, 300*time.Millisecond)
	cfg := server.DefaultConfig()
	cfg.Retries = 0
	cfg.NoVerdict = server.Deny // no scans: only tag lookups reach the registry
	s := newGuardedServer(t, cfg, "127.0.0.1:*")
	imgs := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s/img-%d:v1", svc.hostPort(), i)
		}
		return out
	}

	for _, tc := range []struct {
		n     int
		bound bool
	}{
		{20000, true},
		{server.DefaultMaxImages, false},
	} {
		svc.conns.Store(0)
		svc.peak.Store(0)
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		r := review(s, hostilePod(imgs(tc.n)))
		took := time.Since(start)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		msg := message(r)
		t.Logf("%d images: allowed %v, %d-byte message, %d connections, %d requests at once at most, %s, %d MB allocated, %d goroutines",
			tc.n, r.Allowed, len(msg), svc.conns.Load(), svc.peak.Load(), took.Round(time.Millisecond),
			(after.TotalAlloc-before.TotalAlloc)>>20, runtime.NumGoroutine())
		if r.Allowed {
			t.Fatalf("%d images: allowed", tc.n)
		}
		if len(msg) > 10*420+100 {
			t.Errorf("%d images: a %d-byte message", tc.n, len(msg))
		}
		if tc.bound && (!strings.Contains(msg, "distinct images") || svc.conns.Load() != 0) {
			t.Errorf("%d images: %d connections, message %q", tc.n, svc.conns.Load(), msg)
		}
		if !tc.bound && svc.peak.Load() > 8 {
			t.Errorf("%d images: %d requests at once, %d connections", tc.n, svc.peak.Load(), svc.conns.Load())
		}
		if strings.Contains(msg, internalSecret) {
			t.Errorf("the message holds the registry's body")
		}
	}
}
