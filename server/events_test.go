//go:build !mlwarden_sbatch

package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/server"
)

func eventsConfig(t *testing.T, token string) server.Config {
	t.Helper()
	cfg, err := server.ParseConfig([]byte("events:\n  token: " + token + "\nretry-backoff: 100ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestRegistryEvents pushes to a real docker-registry whose notifications
// endpoint is the server, and waits for the verdict.
func TestRegistryEvents(t *testing.T) {
	const token = "test-events-token"
	sc := newCounting()
	s, hs := startServer(t, server.WithScanner(sc), server.WithConfig(eventsConfig(t, token)))
	reg := startRegistry(t, hs.URL+"/registry/events", token)

	start := time.Now()
	bad := pushImage(t, reg, "ml/pushed", "v1", map[string]string{"app/.env": badMarker})
	waitVerdict(t, s, bad, 30*time.Second)
	t.Logf("push to verdict: %s", time.Since(start))
	v, err := s.Verdict(t.Context(), bad)
	if err != nil {
		t.Fatal(err)
	}
	if v.Summary.High != 1 || v.Findings[0].RuleID != "secrets/test-marker" {
		t.Errorf("verdict %+v", v)
	}

	// The same digest under another tag is not scanned again.
	n := sc.n.Load()
	pushImage(t, reg, "ml/pushed", "v2", map[string]string{"app/.env": badMarker})
	time.Sleep(1500 * time.Millisecond)
	if sc.n.Load() != n {
		t.Errorf("the same digest was scanned again on a second tag")
	}
}

func TestRegistryEventsHTTP(t *testing.T) {
	const token = "test-events-token"
	reg := startRegistry(t, "", "")
	d := pushImage(t, reg, "ml/direct", "v1", map[string]string{"a": "b"})
	sc := newCounting()
	sc.delay = 300 * time.Millisecond
	s, hs := startServer(t, server.WithScanner(sc), server.WithConfig(eventsConfig(t, token)))
	body := `{"events":[
	 {"id":"1","action":"push","target":{"mediaType":"application/octet-stream","digest":"sha256:` + strings.Repeat("a", 64) + `","repository":"ml/direct","url":"http://` + reg + `/v2/ml/direct/blobs/sha256:aa"},"request":{"host":"` + reg + `"}},
	 {"id":"2","action":"pull","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d.DigestStr() + `","repository":"ml/direct"},"request":{"host":"` + reg + `"}},
	 {"id":"3","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d.DigestStr() + `","repository":"ml/direct","url":"http://` + reg + `/v2/ml/direct/manifests/` + d.DigestStr() + `"},"request":{"host":"` + reg + `"}},
	 {"id":"4","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d.DigestStr() + `","repository":"ml/direct","tag":"v1","url":"http://` + reg + `/v2/ml/direct/manifests/` + d.DigestStr() + `"},"request":{"host":"` + reg + `"}}
	]}`
	post := func(auth, ctype string) *http.Response {
		req, _ := http.NewRequest("POST", hs.URL+"/registry/events", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", ctype)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct {
		auth, ctype string
		want        int
	}{
		{"", server.EventsMediaType, 401},
		{"Bearer wrong", server.EventsMediaType, 401},
		{"Bearer " + token, "text/plain", 415},
		{"Bearer " + token, server.EventsMediaType, 202},
		{token, server.EventsMediaType, 202}, // a bare shared secret
	} {
		start := time.Now()
		resp := post(c.auth, c.ctype)
		if resp.StatusCode != c.want {
			t.Errorf("auth %q type %q: HTTP %d, want %d", c.auth, c.ctype, resp.StatusCode, c.want)
		}
		if el := time.Since(start); el > 200*time.Millisecond {
			t.Errorf("answered after %s: the registry must not wait for the scan", el)
		}
	}
	waitVerdict(t, s, d, 10*time.Second)
	if n := sc.n.Load(); n != 1 {
		t.Errorf("scanned %d times, want 1 (deduplicated by digest)", n)
	}
}

func TestRegistryEventsDisabledWithoutToken(t *testing.T) {
	_, hs := startServer(t)
	resp, err := http.Post(hs.URL+"/registry/events", server.EventsMediaType, strings.NewReader(`{"events":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("HTTP %d, want 403", resp.StatusCode)
	}
}

func TestScanRetries(t *testing.T) {
	reg := startRegistry(t, "", "")
	d := pushImage(t, reg, "ml/flaky", "v1", map[string]string{"a": "b"})
	sc := newCounting()
	sc.fail.Store(true)
	cfg := eventsConfig(t, "tok")
	cfg.NoVerdict = server.Warn
	s, hs := startServer(t, server.WithScanner(sc), server.WithConfig(cfg))
	body := `{"events":[{"action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d.DigestStr() + `","repository":"ml/flaky","url":"http://` + reg + `/v2/ml/flaky/manifests/` + d.DigestStr() + `"}}]}`
	req, _ := http.NewRequest("POST", hs.URL+"/registry/events", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Fails at once, then after 100ms and 200ms back-off; succeeds on the 4th try.
	time.Sleep(250 * time.Millisecond)
	sc.fail.Store(false)
	waitVerdict(t, s, d, 10*time.Second)
	if n := sc.n.Load(); n < 2 || n > 4 {
		t.Errorf("%d attempts, want 2 to 4", n)
	}
}
