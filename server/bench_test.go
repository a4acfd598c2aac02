//go:build !mlwarden_sbatch

package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/server"
	"github.com/mlwarden/mlwarden/server/verdict"
)

// BenchmarkAdmissionWarm is the handler's cost for a Pod of three pinned
// images whose verdicts are in a bbolt store (no network, no scan).
func BenchmarkAdmissionWarm(b *testing.B) {
	store, err := verdict.OpenBolt(b.TempDir() + "/v.db")
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var imgs []string
	for i := range 3 {
		d, _ := name.NewDigest(fmt.Sprintf("registry.bench.invalid/ml/img@sha256:%064x", i+1))
		store.Put(b.Context(), d, verdict.FromResult(d, "v1-bench", &scanners.Result{}, time.Now()))
		imgs = append(imgs, d.String())
	}
	s, err := server.New(server.WithStore(store), server.WithRulesVersion("v1-bench"))
	if err != nil {
		b.Fatal(err)
	}
	s.Start(b.Context())
	h := s.Handler()
	t := &testing.T{}
	obj := podObject(t, func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: imgs[0]}}
		p.Spec.Containers = []corev1.Container{{Name: "a", Image: imgs[1]}, {Name: "b", Image: imgs[2]}}
	})
	body := reviewJSON(t, "uid", "Pod", "", "pods", "CREATE", "ml", obj, false)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/admission", bytes.NewReader(body)))
		if rec.Code != 200 || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
