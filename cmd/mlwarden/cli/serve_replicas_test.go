//go:build !mlwarden_sbatch

package cli

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mlwarden/mlwarden/internal/redistest"
	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/server"
	"github.com/mlwarden/mlwarden/server/verdict"
)

// TestServeReplicasShareVerdicts: two serve replicas with their own local
// stores and one Redis (--cache-backend): the first scans an image at
// admission and keeps its verdict; the second, which has no scanner at all,
// answers from that verdict.
func TestServeReplicasShareVerdicts(t *testing.T) {
	host := registrytest.Any(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\n\n"
	tw.WriteHeader(&tar.Header{Name: "usr/lib/python3/site-packages/torch-2.5.1.dist-info/METADATA", Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg})
	tw.Write([]byte(body))
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, _ := mutate.AppendLayers(empty.Image, l)
	repo := registrytest.Repo(t, host)
	d := registrytest.PushImage(t, img, repo+":v1")
	backend := "redis://" + redistest.Addr(t)

	replica := func(withScanner bool) *server.Server {
		sc, err := scan.New(scan.Options{Version: "replicas", CacheBackend: backend, Image: image.Options{CacheDir: t.TempDir(), Insecure: []string{host}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sc.Close)
		var shared verdict.Store
		if c := sc.Cache(); c.Shared() {
			shared = verdict.NewCache(c)
		}
		store, closeStore, err := openServeStore(server.StoreConfig{}, shared, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeStore)
		opts := []server.Option{server.WithStore(store), server.WithRulesVersion(sc.RulesVersion()), server.WithInsecureRegistries(host), server.WithAllowRegistries(host)}
		if withScanner {
			opts = append(opts, server.WithScanner(server.Pipeline{Scanner: sc}))
		}
		srv, err := server.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	pod := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"m","image":"` +
		repo + `@` + d.String() + `"}]}}`)
	review := func(srv *server.Server) *admissionv1.AdmissionResponse {
		return srv.Review(t.Context(), &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: "ml", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: pod}})
	}
	second := replica(false)
	if r := review(second); r.Allowed || !strings.Contains(r.Result.Message, "no scanner") {
		t.Fatalf("second replica before any verdict: allowed %v, %q", r.Allowed, r.Result.Message)
	}
	first := replica(true)
	r := review(first)
	if r.Allowed || !strings.Contains(r.Result.Message, "vulns/") {
		t.Fatalf("first replica: allowed %v, %q", r.Allowed, r.Result.Message)
	}
	r2 := review(second)
	if r2.Allowed || r2.Result.Message != r.Result.Message {
		t.Errorf("second replica: allowed %v, %q; want the first's answer %q", r2.Allowed, r2.Result.Message, r.Result.Message)
	}
}
