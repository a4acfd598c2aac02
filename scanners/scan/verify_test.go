//go:build !mlwarden_sbatch

package scan

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/verify"
)

// fakeHub answers /api/whoami-v2 as the Hub does for one valid token, and
// counts the connections it accepts and the requests it answers.
type fakeHub struct {
	token       string
	conns, reqs atomic.Int64
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.reqs.Add(1)
	if r.URL.Path != "/api/whoami-v2" || r.Header.Get("Authorization") != "Bearer "+h.token {
		http.Error(w, `{"error":"Invalid credentials in Authorization header"}`, http.StatusUnauthorized)
		return
	}
	w.Write([]byte(`{"type":"user","name":"alice"}`))
}

// listenHub serves h on a loopback listener that counts connections.
func listenHub(t *testing.T, h *fakeHub) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			h.conns.Add(1)
		}
	}}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// TestVerifySecretsPipeline: without --verify-secrets a scan opens no
// connection at all, even with the endpoints pointed at a listener; with
// it, one call per distinct secret (the token is in two files), then none
// from the cache in the next run; a scanned directory's .mlwarden.yaml
// cannot turn it on.
func TestVerifySecretsPipeline(t *testing.T) {
	tok := tcToken(31)
	hub := &fakeHub{token: tok}
	endpoints := "huggingface=" + listenHub(t, hub)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "train.sh"), []byte("export HF_TOKEN="+tok+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "eval.sh"), []byte("export HF_TOKEN="+tok+"\nexport HF_TOKEN="+tcToken(32)+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte("secrets:\n  verify: true\n"), 0o644)
	cacheDir := t.TempDir()
	env := func(k string) (string, bool) {
		switch k {
		case EnvVerifyEndpoints:
			return endpoints, true
		case "MLWARDEN_CACHE_DIR":
			return cacheDir, true
		}
		return "", false
	}
	run := func(flags map[string][]string) (*Result, verify.Stats) {
		t.Helper()
		v, err := Configure("scan", flags, env, []string{dir})
		if err != nil {
			t.Fatal(err)
		}
		o, err := OptionsFrom(v)
		if err != nil {
			t.Fatal(err)
		}
		o.Checks = []string{scanners.CheckSecrets}
		o.VerifyEndpoints, _ = env(EnvVerifyEndpoints)
		s, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Run(context.Background(), Target{Ref: dir})
		if err != nil {
			t.Fatal(err)
		}
		return res, s.VerifyStats()
	}

	res, _ := run(nil)
	if n := hub.conns.Load(); n != 0 {
		t.Fatalf("a scan without --verify-secrets (the target's config asking for it) opened %d connections", n)
	}
	for _, f := range res.Findings {
		if f.Verification != "" {
			t.Errorf("%s:%d verified without the flag: %s", f.Path, f.Line, f.Verification)
		}
	}

	on := map[string][]string{"verify-secrets": {"true"}}
	res, st := run(on)
	if st.Calls != 2 || hub.reqs.Load() != 2 {
		t.Errorf("first run: %d calls, %d requests answered; want 2 (one per distinct secret)", st.Calls, hub.reqs.Load())
	}
	var live, revoked int
	for i, f := range res.Findings {
		switch f.Verification {
		case scanners.VerificationLive:
			live++
			if i >= 2 {
				t.Errorf("live finding at %d, after others", i)
			}
			if !strings.Contains(f.Message, "alice") || strings.Contains(f.Message, tok) {
				t.Errorf("live message: %s", f.Message)
			}
		case scanners.VerificationRevoked:
			revoked++
		}
	}
	if live != 2 || revoked != 1 {
		t.Errorf("live %d, revoked %d; want 2 and 1:\n%+v", live, revoked, res.Findings)
	}

	_, st = run(on)
	if st.Calls != 0 || st.Cached != 2 || hub.reqs.Load() != 2 {
		t.Errorf("second run: %d calls, %d cached, %d requests in all; want 0, 2 and 2", st.Calls, st.Cached, hub.reqs.Load())
	}
}

// TestVerifyEndpointsRefused: a non-loopback override is an error of New,
// before anything is dialled.
func TestVerifyEndpointsRefused(t *testing.T) {
	for _, ep := range []string{"huggingface=https://huggingface.co", "github=http://10.0.0.1:80", "github=http://localhost:1", "nosuch=http://127.0.0.1:1"} {
		_, err := New(Options{Checks: []string{scanners.CheckSecrets}, VerifySecrets: true, VerifyEndpoints: ep, Image: imageOptions{NoCache: true}})
		if err == nil || !strings.Contains(err.Error(), verify.EnvEndpoints) {
			t.Errorf("%s: %v", ep, err)
		}
	}
	if EnvVerifyEndpoints != verify.EnvEndpoints {
		t.Errorf("%s != %s", EnvVerifyEndpoints, verify.EnvEndpoints)
	}
}
