//go:build !mlwarden_sbatch

package cli

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func hfToken(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed+3))
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := []byte("hf_")
	for range 34 {
		b = append(b, abc[r.IntN(len(abc))])
	}
	return string(b)
}

// TestVerifySecretsCLI: against a loopback Hugging Face fake, a live token
// fails the run with --fail-on-live-only although an ignore entry with
// unless: live covers it, a revoked one stays suppressed; without a live
// token the run passes; --fail-on-live-only needs --verify-secrets, and a
// non-loopback endpoint override is refused: both exit 2.
func TestVerifySecretsCLI(t *testing.T) {
	live := hfToken(61)
	var calls atomic.Int64
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path == "/api/whoami-v2" && r.Header.Get("Authorization") == "Bearer "+live {
			w.Write([]byte(`{"type":"user","name":"alice"}`))
			return
		}
		http.Error(w, "{}", http.StatusUnauthorized)
	}))
	defer hub.Close()
	t.Setenv("MLWARDEN_VERIFY_ENDPOINTS", "huggingface="+hub.URL)
	t.Setenv("MLWARDEN_CACHE_DIR", t.TempDir())
	base := t.TempDir()
	cfg := filepath.Join(base, "mlwarden.yaml")
	os.WriteFile(cfg, []byte("ignore:\n  - rule: secrets/*\n    reason: test tokens\n    unless: live\n"), 0o644)
	dir := filepath.Join(base, "repo")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.sh"), []byte("export HF_TOKEN="+hfToken(62)+"\n"), 0o644)

	args := []string{"--checks", "secrets", "--config", cfg, "--verify-secrets", "--fail-on-live-only", dir}
	code, res := scanJSON(t, args...)
	if code != ExitOK || res.Summary.Suppressed != 1 || res.Findings[0].Verification != scanners.VerificationRevoked {
		t.Errorf("revoked only: exit %d, %+v", code, res.Findings)
	}
	os.WriteFile(filepath.Join(dir, "b.sh"), []byte("export HF_TOKEN="+live+"\n"), 0o644)
	code, res = scanJSON(t, args...)
	if code != ExitFindings || len(res.Findings) != 2 || res.Findings[0].Verification != scanners.VerificationLive || res.Findings[0].Suppressed != "" {
		t.Errorf("with a live token: exit %d, %+v", code, res.Findings)
	}
	if calls.Load() != 2 {
		t.Errorf("%d calls for 2 distinct tokens over two runs, want 2 (the second from the cache)", calls.Load())
	}
	code, out, _ := run(t, "", "scan", "--checks", "secrets", "-q", "--verify-secrets", dir)
	if code != ExitFindings || !strings.Contains(out, "LIVE") || !strings.Contains(out, "verification: live") || strings.Contains(out, live) {
		t.Errorf("text: exit %d\n%s", code, out)
	}

	if code, _, stderr := run(t, "", "scan", "--fail-on-live-only", dir); code != ExitError || !strings.Contains(stderr, "needs --verify-secrets") {
		t.Errorf("--fail-on-live-only alone: exit %d: %s", code, stderr)
	}
	t.Setenv("MLWARDEN_VERIFY_ENDPOINTS", "huggingface=https://huggingface.co")
	if code, _, stderr := run(t, "", "scan", "--checks", "secrets", "--verify-secrets", dir); code != ExitError || !strings.Contains(stderr, "loopback") {
		t.Errorf("non-loopback override: exit %d: %s", code, stderr)
	}
}
