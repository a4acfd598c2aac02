//go:build !mlwarden_sbatch

package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/server"
)

// harborClient talks to the adapter as Harbor's scanner client does: it does
// not follow redirects and polls the report on 302 after Refresh-After.
type harborClient struct {
	t     *testing.T
	base  string
	c     *http.Client
	token string // sent as a bearer token when set
}

// harborToken is the adapter's token in these tests: without one the
// adapter is not served.
const harborToken = "harbor-test-token"

// harborConfig is the default config with the Harbor adapter's token.
func harborConfig() server.Config {
	cfg := server.DefaultConfig()
	cfg.Harbor.Token = harborToken
	return cfg
}

func newHarborClient(t *testing.T, base string) *harborClient {
	return &harborClient{t: t, base: base, c: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}}
}

func (h *harborClient) do(method, path, accept, ctype string, body []byte) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// report polls until the report is ready, as Harbor does.
func (h *harborClient) report(id, accept string) (*http.Response, []byte, int) {
	h.t.Helper()
	polls := 0
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, data := h.do("GET", "/api/v1/scan/"+id+"/report", accept, "", nil)
		if resp.StatusCode != http.StatusFound {
			return resp, data, polls
		}
		polls++
		ra, err := strconv.Atoi(resp.Header.Get("Refresh-After"))
		if err != nil || ra <= 0 {
			h.t.Fatalf("302 without a Refresh-After in seconds: %q", resp.Header.Get("Refresh-After"))
		}
		if time.Now().After(deadline) {
			h.t.Fatal("report not ready in 30s")
		}
		time.Sleep(100 * time.Millisecond) // Harbor waits ra seconds; the test need not
	}
}

func TestHarborAdapter(t *testing.T) {
	reg := startRegistry(t, "", "")
	_, bad := testImages(t, reg)
	sc := newCounting()
	sc.delay = 500 * time.Millisecond // long enough to see a 302
	_, hs := startServer(t, server.WithConfig(harborConfig()), server.WithScanner(sc), server.WithVersion("1.2.3"), server.WithRulesVersion("v1-test"))
	h := newHarborClient(t, hs.URL)
	h.token = harborToken

	resp, data := h.do("GET", "/api/v1/metadata", "", "", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.scanner.adapter.metadata+json") {
		t.Fatalf("metadata: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var md struct {
		Scanner      struct{ Name, Vendor, Version string }
		Capabilities []struct {
			Type              string   `json:"type"`
			ConsumesMimeTypes []string `json:"consumes_mime_types"`
			ProducesMimeTypes []string `json:"produces_mime_types"`
		}
		Properties map[string]string
	}
	if err := json.Unmarshal(data, &md); err != nil {
		t.Fatal(err)
	}
	if md.Scanner.Name != "mlwarden" || md.Scanner.Version != "1.2.3" || len(md.Capabilities) != 1 ||
		!strings.Contains(strings.Join(md.Capabilities[0].ProducesMimeTypes, ","), server.HarborVulnReportMIME) {
		t.Errorf("metadata %s", data)
	}

	scanReq := mustJSON(t, map[string]any{
		"registry": map[string]string{
			"url":           "http://" + reg,
			"authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("robot$scanner:secret")),
		},
		"artifact": map[string]string{
			"repository": "ml/bad", "digest": bad.DigestStr(), "tag": "v1",
			"mime_type": "application/vnd.oci.image.manifest.v1+json",
		},
	})
	start := time.Now()
	resp, data = h.do("POST", "/api/v1/scan", "", "application/vnd.scanner.adapter.scan.request+json; version=1.1", scanReq)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("scan: HTTP %d %s", resp.StatusCode, data)
	}
	if el := time.Since(start); el > 300*time.Millisecond {
		t.Errorf("POST /scan blocked for %s", el)
	}
	var sr struct{ ID string }
	if err := json.Unmarshal(data, &sr); err != nil || sr.ID == "" {
		t.Fatalf("scan response %s", data)
	}

	resp, data, polls := h.report(sr.ID, server.HarborVulnReportMIME)
	if resp.StatusCode != 200 {
		t.Fatalf("report: HTTP %d %s", resp.StatusCode, data)
	}
	if polls == 0 {
		t.Errorf("no 302 while the scan ran")
	}
	if ct := resp.Header.Get("Content-Type"); ct != server.HarborVulnReportMIME {
		t.Errorf("report content type %q", ct)
	}
	var rep struct {
		Artifact        struct{ Repository, Digest string }
		Severity        string
		Vulnerabilities []struct {
			ID, Package, Severity, Description string
		}
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Severity != "High" || len(rep.Vulnerabilities) != 1 || rep.Artifact.Digest != bad.DigestStr() {
		t.Fatalf("report %s", data)
	}
	if v := rep.Vulnerabilities[0]; v.ID != "secrets/test-marker" || v.Package != "/app/.env" || v.Severity != "High" {
		t.Errorf("vulnerability %+v", v)
	}

	// The raw report is mlwarden's verdict.
	resp, data, _ = h.report(sr.ID, server.HarborRawReportMIME)
	if resp.StatusCode != 200 || !bytes.Contains(data, []byte(`"rules_version":"v1-test"`)) {
		t.Errorf("raw report: HTTP %d %s", resp.StatusCode, data)
	}
	// An unknown report type and an unknown ID answer with the spec's errors.
	resp, _ = h.do("GET", "/api/v1/scan/"+sr.ID+"/report", "application/vnd.security.sbom.report+json; version=1.0", "", nil)
	if resp.StatusCode != http.StatusNotImplemented || resp.Header.Get("Content-Type") != server.HarborErrorMIME {
		t.Errorf("sbom report: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, _ = h.do("GET", "/api/v1/scan/not*an*id/report", "", "", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown id: HTTP %d", resp.StatusCode)
	}
	resp, data = h.do("POST", "/api/v1/scan", "", "application/vnd.scanner.adapter.scan.request+json; version=1.0", []byte(`{"registry":{"url":""},"artifact":{}}`))
	if resp.StatusCode != http.StatusUnprocessableEntity || resp.Header.Get("Content-Type") != server.HarborErrorMIME ||
		!bytes.Contains(data, []byte(`"error":{"message"`)) {
		t.Errorf("invalid request: HTTP %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
}

func TestHarborScanFailure(t *testing.T) {
	reg := startRegistry(t, "", "")
	good, _ := testImages(t, reg)
	sc := newCounting()
	sc.fail.Store(true)
	cfg := harborConfig()
	cfg.Retries = 0
	_, hs := startServer(t, server.WithScanner(sc), server.WithConfig(cfg))
	h := newHarborClient(t, hs.URL)
	h.token = harborToken
	resp, data := h.do("POST", "/api/v1/scan", "", "application/vnd.scanner.adapter.scan.request+json; version=1.1", mustJSON(t, map[string]any{
		"registry": map[string]string{"url": "http://" + reg},
		"artifact": map[string]string{"repository": "ml/good", "digest": good.DigestStr()},
	}))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("HTTP %d %s", resp.StatusCode, data)
	}
	var sr struct{ ID string }
	json.Unmarshal(data, &sr)
	resp, data, _ = h.report(sr.ID, "")
	if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("Content-Type") != server.HarborErrorMIME {
		t.Errorf("failed scan: HTTP %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
}
