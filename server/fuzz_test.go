//go:build !mlwarden_sbatch

package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/server"
)

// noNetwork refuses every registry request, so that fuzzed image names never
// leave the process.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("fuzzing: no network")
}

func fuzzServer(f *testing.F) http.Handler {
	cfg := server.DefaultConfig()
	cfg.Events.Token = "tok"
	cfg.Harbor.Token = "tok"
	s, err := server.New(server.WithConfig(cfg), server.WithRemoteOptions(remote.WithTransport(noNetwork{})))
	if err != nil {
		f.Fatal(err)
	}
	s.Start(f.Context())
	return s.Handler()
}

func fuzzPost(f *testing.F, h http.Handler, path, ctype string, auth string, body []byte, ok ...int) {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, c := range ok {
		if rec.Code == c {
			return
		}
	}
	panic("unexpected status " + http.StatusText(rec.Code) + ": " + rec.Body.String())
}

// FuzzAdmission feeds untrusted AdmissionReview bodies to the webhook: it
// must answer 200 or 4xx, never panic.
func FuzzAdmission(f *testing.F) {
	files, _ := filepath.Glob("testdata/objects/*.json")
	for _, p := range files {
		obj, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"ml","object":` + string(obj) + `}}`))
	}
	f.Add([]byte(`{"request":{"uid":"u","kind":{"kind":"CronJob"},"operation":"UPDATE","object":{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:y"}]}}}}}}}}`))
	f.Add([]byte(`{"request":{"kind":{"kind":"Pod"},"operation":"CREATE","object":{"spec":{"volumes":[{"name":"d","hostPath":{"path":"/dev/nvidia0"}}],"containers":[{"image":"@@"}]}}}}`))
	// Registries the guard refuses (issue 37, item 22), and a review over
	// the image bound (item 25).
	for _, img := range []string{"169.254.169.254/latest/meta-data:v1", "2852039166:80/x:y", "0251.0376.0251.0376/x:y",
		"[::ffff:169.254.169.254]/x:y", "[fe80::1%25eth0]:5000/x:y", "localhost:6379/x:y", "127.1:6379/x@sha256:" + strings.Repeat("0", 64)} {
		f.Add([]byte(`{"request":{"uid":"u","kind":{"kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":[{"name":"a","image":"` + img + `"}]}}}}`))
	}
	var many strings.Builder
	for i := range 100 {
		fmt.Fprintf(&many, `{"name":"c%d","image":"127.0.0.1:1/i%d:v1"},`, i, i)
	}
	f.Add([]byte(`{"request":{"uid":"u","kind":{"kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":[` + strings.TrimSuffix(many.String(), ",") + `]}}}}`))
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzPost(f, h, "/admission", "application/json", "", body, 200, 400, 413)
	})
}

// FuzzRegistryEvents feeds untrusted notification envelopes.
func FuzzRegistryEvents(f *testing.F) {
	f.Add([]byte(`{"events":[{"action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","repository":"a/b","url":"http://127.0.0.1:1/v2/a/b/manifests/x","tag":"v1"},"request":{"host":"127.0.0.1:1"}}]}`))
	f.Add([]byte(`{"events":[{"action":"push","target":{"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","digest":"sha256:zz","repository":"A//b"}}]}`))
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzPost(f, h, "/registry/events", server.EventsMediaType, "Bearer tok", body, 202, 400)
	})
}

// FuzzHarborScan feeds untrusted Harbor scan requests.
func FuzzHarborScan(f *testing.F) {
	f.Add([]byte(`{"registry":{"url":"http://127.0.0.1:1","authorization":"Basic eDp5"},"artifact":{"repository":"library/x","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}}`))
	f.Add([]byte(`{"registry":{"url":"::"},"artifact":{"repository":"","digest":""}}`))
	for _, u := range []string{"http://169.254.169.254", "https://[::ffff:a9fe:a9fe]:443", "http://2852039166", "ftp://registry.example", "http://registry.example", "https://localhost:6379"} {
		f.Add([]byte(`{"registry":{"url":"` + u + `"},"artifact":{"repository":"x","digest":"sha256:` + strings.Repeat("0", 64) + `"}}`))
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzPost(f, h, "/api/v1/scan", server.HarborScanRequestMIME+"; version=1.1", "Bearer tok", body, 202, 400, 422, 501)
	})
}
