//go:build !mlwarden_sbatch

package server_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzPost(f, h, "/api/v1/scan", server.HarborScanRequestMIME+"; version=1.1", "", body, 202, 400, 422, 501)
	})
}
