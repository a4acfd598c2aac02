//go:build !mlwarden_sbatch

package scan_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/internal/redistest"
	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// cacheImage is a four-layer image with findings of several checks in
// each layer, and facts that checks judging the image as a whole join.
func cacheImage(t testing.TB) v1.Image {
	t.Helper()
	layer := func(files ...string) v1.Layer {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for i := 0; i < len(files); i += 2 {
			tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o644, Size: int64(len(files[i+1])), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg})
			tw.Write([]byte(files[i+1]))
		}
		tw.Close()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	img, err := mutate.AppendLayers(empty.Image,
		layer("usr/local/lib/python3.11/site-packages/torch-2.5.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\n\n"),
		layer("app/requirements.txt", "torch>=2.0\nnumpy\n", "app/Dockerfile", "FROM python:3.11\nRUN pip install torch\n"),
		layer("app/train.py", "import torch\nm = torch.load('ckpt.pt')\n", "app/run.sbatch", "#!/bin/bash\n#SBATCH --gres=gpu:1\npip install transformers\npython train.py\n"),
		layer("deploy/job.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: team-a\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: r.example/x:latest\n          resources:\n            limits:\n              nvidia.com/gpu: 1\n"),
	)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

type warns struct {
	mu   sync.Mutex
	list []string
}

func (w *warns) add(s string) { w.mu.Lock(); w.list = append(w.list, s); w.mu.Unlock() }
func (w *warns) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// scanJSON scans target with o and returns the report and the cache's hits.
func scanJSON(t testing.TB, o scan.Options, target string) ([]byte, int64) {
	t.Helper()
	sc, err := scan.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	res, err := sc.Run(context.Background(), scan.Target{Ref: target})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	data, _ := json.MarshalIndent(res.Result, "", " ")
	return data, sc.Cache().Stats().Hits
}

// TestCacheChild is the second process of TestCacheTwoProcesses.
func TestCacheChild(t *testing.T) {
	target := os.Getenv("MLWARDEN_TEST_CACHE_CHILD")
	if target == "" {
		t.Skip("the child of TestCacheTwoProcesses")
	}
	data, hits := scanJSON(t, scan.Options{Version: "cache-test", CacheBackend: os.Getenv("MLWARDEN_TEST_CACHE_BACKEND"),
		Image: image.Options{CacheDir: t.TempDir(), Insecure: []string{"127.0.0.1"}}}, target)
	fmt.Printf("HITS %d\n%s\nEND\n", hits, data)
}

// TestCacheTwoProcesses: a second process (a second CI runner, its local
// cache directory empty) replays what the first stored in Redis, and
// reports exactly what the first did.
func TestCacheTwoProcesses(t *testing.T) {
	host := registrytest.Any(t)
	ref := registrytest.Repo(t, host) + ":two"
	registrytest.PushImage(t, cacheImage(t), ref)
	backend := "redis://" + redistest.Addr(t)
	first, hits := scanJSON(t, scan.Options{Version: "cache-test", CacheBackend: backend, Image: image.Options{CacheDir: t.TempDir(), Insecure: []string{host}}}, "registry:"+ref)
	if hits != 0 {
		t.Fatalf("first scan of a new image: %d hits", hits)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCacheChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MLWARDEN_TEST_CACHE_CHILD=registry:"+ref, "MLWARDEN_TEST_CACHE_BACKEND="+backend)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("second process: %v\n%s", err, out)
	}
	s := string(out)
	i, j := strings.Index(s, "HITS "), strings.Index(s, "\nEND\n")
	if i < 0 || j < i {
		t.Fatalf("second process printed:\n%s", out)
	}
	var n int
	fmt.Sscanf(s[i:], "HITS %d", &n)
	second := s[strings.IndexByte(s[i:], '\n')+i+1 : j]
	if n != 4 {
		t.Errorf("second process replayed %d layers from Redis, want 4", n)
	}
	if second != string(first) {
		t.Errorf("second process's report differs:\nfirst:\n%s\nsecond:\n%s", first, second)
	}
}

// TestCacheRulesVersionMisses: results kept under one rules version are
// never replayed under another (another build, check set or config).
func TestCacheRulesVersionMisses(t *testing.T) {
	host := registrytest.Any(t)
	ref := registrytest.Repo(t, host) + ":rv"
	registrytest.PushImage(t, cacheImage(t), ref)
	backend := "redis://" + redistest.Addr(t)
	o := scan.Options{Version: "rules-a", CacheBackend: backend, Image: image.Options{CacheDir: t.TempDir(), Insecure: []string{host}}}
	scanJSON(t, o, "registry:"+ref)
	if _, hits := scanJSON(t, o, "registry:"+ref); hits != 4 {
		t.Fatalf("same rules version: %d hits, want 4", hits)
	}
	for _, change := range []func(*scan.Options){
		func(o *scan.Options) { o.Version = "rules-b" },
		func(o *scan.Options) { o.Checks = []string{"secrets", "pins"} },
		func(o *scan.Options) { o.Skip.Files = []string{"*.txt"} },
	} {
		o2 := o
		change(&o2)
		if _, hits := scanJSON(t, o2, "registry:"+ref); hits != 0 {
			t.Errorf("%+v: %d hits from another rules version", o2.Checks, hits)
		}
	}
}

// killer is a check that kills the cache server the first time it sees
// path: the cache dies in the middle of a scan.
type killer struct {
	path string
	once sync.Once
	kill func()
}

func (k *killer) Check() string                             { return "killer" }
func (k *killer) Rules() []scanners.Rule                    { return nil }
func (k *killer) Wants(a *scanners.Artifact, _ []byte) bool { return a.Path == k.path }
func (k *killer) Scan(context.Context, *scanners.Artifact, scanners.Content) ([]scanners.Finding, error) {
	k.once.Do(k.kill)
	return nil, nil
}

// TestCacheKilledMidScan: a Redis server that dies while a scan runs, or is
// gone before the next one, is one warning and a cold scan with the same
// findings — never an error, never fewer findings.
func TestCacheKilledMidScan(t *testing.T) {
	host := registrytest.Any(t)
	ref := registrytest.Repo(t, host) + ":kill"
	registrytest.PushImage(t, cacheImage(t), ref)
	target := "registry:" + ref
	srv := redistest.Start(t)
	checks := func(extra scanners.Scanner) []scanners.Scanner {
		cs, err := catalog.New(catalog.Options{Checks: catalog.Names()})
		if err != nil {
			t.Fatal(err)
		}
		return append(cs, extra)
	}
	base := func(w *warns, extra scanners.Scanner) scan.Options {
		return scan.Options{Version: "kill", Scanners: checks(extra), Warn: w.add, CacheBackend: srv.URL(),
			Image: image.Options{CacheDir: t.TempDir(), Insecure: []string{host}}}
	}
	var w0 warns
	want, _ := scanJSON(t, scan.Options{Version: "kill", Scanners: checks(&killer{path: "/none"}), Warn: w0.add,
		Image: image.Options{NoCache: true, Insecure: []string{host}}}, target)
	var w1 warns
	got, _ := scanJSON(t, base(&w1, &killer{path: "/app/train.py", kill: srv.Kill}), target)
	if string(got) != string(want) {
		t.Errorf("killed mid-scan: report differs from --no-cache:\n%s\nwant:\n%s", got, want)
	}
	if ws := w1.get(); len(ws) != 1 || !strings.Contains(ws[0], "scanning without it") {
		t.Errorf("killed mid-scan: warnings %q, want one", ws)
	}
	var w2 warns
	got, _ = scanJSON(t, base(&w2, &killer{path: "/none"}), target)
	if string(got) != string(want) {
		t.Errorf("server gone: report differs from --no-cache")
	}
	if ws := w2.get(); len(ws) != 1 {
		t.Errorf("server gone: warnings %q, want one", ws)
	}
}
