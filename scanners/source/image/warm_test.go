//go:build !mlwarden_sbatch

package image_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/internal/redistest"
	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners/cache"
	"github.com/mlwarden/mlwarden/scanners/misconfig"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/scanners/vulns"
)

// tarLayer is a layer of regular files.
func tarLayer(t testing.TB, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range sortedKeys(files) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// finisherImage is an image whose layers feed the checks that judge the
// image as a whole: a GPU Operator values file and a tenant namespace
// without a NetworkPolicy (misconfig.Cluster), a torch release that
// CVE-2025-32434 affects and, in another layer, a torch.load call (vulns).
func finisherImage(t testing.TB) v1.Image {
	t.Helper()
	read := func(p string) string {
		data, err := os.ReadFile("../../../fixtures/demo/k8s/" + p)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	img, err := mutate.AppendLayers(empty.Image,
		tarLayer(t, map[string]string{
			"deploy/gpu-operator-values.yaml": read("gpu-operator-values.yaml"),
			"deploy/tenant.yaml":              read("tenant.yaml"),
		}),
		tarLayer(t, map[string]string{
			"usr/local/lib/python3.11/site-packages/torch-2.5.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\n\n",
		}),
		tarLayer(t, map[string]string{
			"app/train.py": "import torch\n\nmodel = torch.load(\"/data/ckpt.pt\", weights_only=True)\nprint(model)\n",
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestWarmRescanEqualsCold: a rescan whose layers all come from the cache
// gives the byte-identical report a cold scan and a --no-cache scan give,
// with every check enabled, for every backend — including the findings of
// the checks that judge the image as a whole from facts of several layers.
func TestWarmRescanEqualsCold(t *testing.T) {
	host := registrytest.Any(t)
	ref := registrytest.Repo(t, host) + ":warm"
	registrytest.PushImage(t, finisherImage(t), ref)
	target := "registry:" + ref

	run := func(c *cache.Cache, noCache bool) []byte {
		t.Helper()
		sc, err := scan.New(scan.Options{Version: "warm-test", Image: image.Options{Cache: c, NoCache: noCache, Insecure: []string{host}}})
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		res, err := sc.Run(t.Context(), scan.Target{Ref: target})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Errors) > 0 {
			t.Fatalf("errors: %+v", res.Errors)
		}
		data, err := json.MarshalIndent(res.Result, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	baseline := run(nil, true)
	for _, rule := range []string{vulns.RuleTorchLoadWeights, misconfig.RuleGPUNamespaceNoDefaultDeny.ID, "vulns/gpu-operator", "vulns/container-toolkit"} {
		if !bytes.Contains(baseline, []byte(`"`+rule)) {
			t.Fatalf("the --no-cache scan has no %s finding: the image does not test what it should\n%s", rule, baseline)
		}
	}
	backends := map[string]string{"fs": "fs", "redis": "redis://" + redistest.Addr(t)}
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			open := func() *cache.Cache {
				if name != "fs" {
					dir = t.TempDir() // a second runner's own disk
				}
				c, err := cache.Open(backend, cache.Options{Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			checkWarm(t, run, open(), open(), baseline)
		})
	}
}

func checkWarm(t *testing.T, run func(*cache.Cache, bool) []byte, first, second *cache.Cache, baseline []byte) {
	t.Helper()
	cold := run(first, false)
	if st := first.Stats(); st.Puts < 3 {
		t.Fatalf("the cold scan stored %d layers, want 3: %+v", st.Puts, st)
	}
	warm := run(second, false)
	if st := second.Stats(); st.Hits < 3 {
		t.Fatalf("the warm scan replayed %d layers, want 3: %+v", st.Hits, st)
	}
	if !bytes.Equal(cold, baseline) {
		t.Errorf("cold scan filling the cache differs from --no-cache:\n%s", diffLines(baseline, cold))
	}
	if !bytes.Equal(warm, cold) {
		t.Errorf("warm rescan differs from the cold scan:\n%s", diffLines(cold, warm))
	}
}

func diffLines(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
		if len(out) > 40 {
			break
		}
	}
	return strings.Join(out, "\n")
}
