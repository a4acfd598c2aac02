//go:build !mlwarden_sbatch

package sweep_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/mlwarden/mlwarden/internal/faultproxy"
	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/scanners/sweep"
)

// pushImages pushes n small images with findings under base/img-NN, two
// tags each (v1 and latest), and returns base's repository path.
func pushImages(t *testing.T, host string, n int) string {
	t.Helper()
	base := registrytest.Repo(t, host)
	for i := range n {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, f := range [][2]string{
			{"app/requirements.txt", fmt.Sprintf("torch>=2.%d\nnumpy\n", i)},
			{"app/train.py", fmt.Sprintf("import torch\nm = torch.load('ckpt-%d.pt')\n", i)},
		} {
			tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg})
			tw.Write([]byte(f[1]))
		}
		tw.Close()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
		if err != nil {
			t.Fatal(err)
		}
		img, _ := mutate.AppendLayers(empty.Image, l)
		repo := fmt.Sprintf("%s/img-%02d", base, i)
		registrytest.PushImage(t, img, repo+":v1", repo+":latest")
	}
	return strings.TrimPrefix(base, host+"/")
}

func TestSweepRegistry(t *testing.T) {
	host := registrytest.Any(t)
	const n = 30
	base := pushImages(t, host, n)
	l := &sweep.Lister{}
	if os.Getenv(registrytest.Env) != "" {
		// Several pages of catalog and tags (the distribution registry
		// pages by Link headers; go-containerregistry's in-process one
		// cuts the list at n without saying so).
		l.PageSize = 7
	}
	targets, err := l.List(t.Context(), nil, "registry:"+host+"/"+base+"/*:v*")
	if err != nil {
		t.Fatal(err)
	}
	if len(targets) != n || !slices.IsSorted(targets) || !strings.HasSuffix(targets[0], "/img-00:v1") {
		t.Fatalf("listed %d: %q", len(targets), targets)
	}
	all, err := l.List(t.Context(), nil, "registry:"+host+"/"+base+"/**")
	if err != nil || len(all) != 2*n {
		t.Fatalf("every tag: %d, %v", len(all), err)
	}

	// Shards cover every target exactly once.
	seen := map[string]int{}
	var shards [][]string
	for i := range 4 {
		s := sweep.Split(targets, sweep.Shard{Index: i, Count: 4})
		shards = append(shards, s)
		for _, x := range s {
			seen[x]++
		}
		if len(s) < n/4 || len(s) > n/4+1 {
			t.Errorf("shard %d has %d targets", i, len(s))
		}
	}
	for _, x := range targets {
		if seen[x] != 1 {
			t.Errorf("%s is in %d shards", x, seen[x])
		}
	}
	if len(seen) != n {
		t.Errorf("shards hold %d targets, want %d", len(seen), n)
	}

	// Merging the shards' reports gives one scan of everything.
	newScanner := func(dir string) *scan.Scanner {
		sc, err := scan.New(scan.Options{Version: "sweep-test", Image: image.Options{CacheDir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sc.Close)
		return sc
	}
	var parts []*scanners.Result
	dir := t.TempDir()
	for _, s := range shards {
		res, err := (&sweep.Runner{Scanner: newScanner(dir), Lister: l, Resume: true}).Run(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		// Through the JSON report, as merge reads it.
		data, _ := json.Marshal(res)
		back, err := sweep.ReadReport(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, back)
	}
	slices.Reverse(parts) // the order reports are given in does not matter
	merged, err := sweep.Merge(parts...)
	if err != nil {
		t.Fatal(err)
	}
	sc := newScanner(t.TempDir())
	var refs []scan.Target
	for _, x := range targets {
		refs = append(refs, scan.Target{Ref: x})
	}
	single, err := sc.Run(t.Context(), refs...)
	if err != nil {
		t.Fatal(err)
	}
	// As the JSON report writes them.
	var want, got bytes.Buffer
	reports.Write(&want, "json", single.Result, reports.Options{})
	reports.Write(&got, "json", merged, reports.Options{})
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("merged shards differ from one scan of every target:\n%s\nwant:\n%s", got.Bytes(), want.Bytes())
	}
	if len(single.Findings) == 0 || len(single.Errors) > 0 {
		t.Fatalf("one scan: %+v", single.Summary)
	}
	if _, err := sweep.Merge(parts[0], parts[0]); err == nil {
		t.Error("merging a shard with itself: no error")
	}

	// Resumable: a second run of a shard over the same cache reports the
	// kept results, says so, and finds the same.
	again, err := (&sweep.Runner{Scanner: newScanner(dir), Lister: l, Resume: true}).Run(t.Context(), shards[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range again.Targets {
		if !slices.Contains(tg.Notes, sweep.NoteResumed) {
			t.Errorf("%s rescanned: notes %q", tg.Name, tg.Notes)
		}
	}
	first, _ := sweep.Merge(parts[len(parts)-2])
	if !slices.EqualFunc(again.Findings, first.Findings, func(a, b scanners.Finding) bool { return a == b }) {
		t.Error("resumed shard's findings differ")
	}
	// Another salt (another baseline) or --no-cache rescans.
	other, _ := (&sweep.Runner{Scanner: newScanner(dir), Lister: l, Resume: true, Salt: "x"}).Run(t.Context(), shards[1][:1])
	if slices.Contains(other.Targets[0].Notes, sweep.NoteResumed) {
		t.Error("a result kept under another salt was reused")
	}
}

func TestListFileAndTargets(t *testing.T) {
	f := filepath.Join(t.TempDir(), "list")
	os.WriteFile(f, []byte("# images\nregistry:r.example/b:1\n\n  registry:r.example/a:1  \nhf:org/m\n"), 0o644)
	got, err := (&sweep.Lister{}).List(t.Context(), strings.NewReader("dir:/x\n"), "@"+f, "@-", "registry:r.example/a:1", "./local")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"./local", "dir:/x", "hf:org/m", "registry:r.example/a:1", "registry:r.example/b:1"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := (&sweep.Lister{MaxTargets: 2}).List(t.Context(), nil, "@"+f); err == nil {
		t.Error("more than MaxTargets: no error")
	}
	if _, err := (&sweep.Lister{}).List(t.Context(), nil, "registry:nohost*"); err == nil {
		t.Error("a registry pattern without a repository: no error")
	}
}

// TestListHub: hf:ORG/* pages through GET /api/models?author=ORG by its Link
// headers, keeps the organisation's repositories that match, and sends the
// token only to the Hub.
func TestListHub(t *testing.T) {
	var auth []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		if r.URL.Path == "/api/models/org/bert/revision/main" {
			fmt.Fprint(w, `{"sha":"0123456789abcdef0123456789abcdef01234567"}`)
			return
		}
		if r.URL.Path != "/api/models" || r.URL.Query().Get("author") != "org" {
			http.NotFound(w, r)
			return
		}
		switch r.URL.Query().Get("cursor") {
		case "":
			w.Header().Set("Link", `<`+srv.URL+`/api/models?author=org&cursor=2>; rel="next"`)
			fmt.Fprint(w, `[{"id":"org/bert"},{"id":"org/llama-7b"},{"id":"other/x"}]`)
		case "2":
			w.Header().Set("Link", `<https://elsewhere.example/api/models?cursor=3>; rel="next"`)
			fmt.Fprint(w, `[{"id":"org/llama-13b"},{"id":"org/bad/name"}]`)
		default:
			t.Error("followed a link off the Hub")
		}
	}))
	defer srv.Close()
	l := &sweep.Lister{HubEndpoint: srv.URL, HubToken: "tok"}
	got, err := l.List(t.Context(), nil, "hf:org/*")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"hf:org/bert", "hf:org/llama-13b", "hf:org/llama-7b"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, _ := l.List(t.Context(), nil, "hf:org/llama-*"); len(got) != 2 {
		t.Errorf("glob: %q", got)
	}
	if auth[0] != "Bearer tok" {
		t.Errorf("token not sent: %q", auth)
	}
	if d := l.Resolve(t.Context(), "hf:org/bert"); d != "0123456789abcdef0123456789abcdef01234567" {
		t.Errorf("resolve: %q", d)
	}
	if _, err := l.List(t.Context(), nil, "hf:nosuch/*"); err == nil {
		t.Error("a listing that is not found: no error")
	}
}

func TestShardFrom(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		shard string
		count int
		env   map[string]string
		want  string
		err   bool
	}{
		{"", 0, nil, "0/1", false},
		{"2/4", 0, nil, "2/4", false},
		{"4/4", 0, nil, "", true},
		{"2/4", 3, nil, "", true},
		{"x", 0, nil, "", true},
		{"", 8, map[string]string{"JOB_COMPLETION_INDEX": "5"}, "5/8", false},
		{"", 0, map[string]string{"JOB_COMPLETION_INDEX": "5", "JOB_COMPLETIONS": "6"}, "5/6", false},
		{"", 4, map[string]string{"JOB_COMPLETION_INDEX": "4"}, "", true},
	} {
		got, err := sweep.ShardFrom(tc.shard, tc.count, env(tc.env))
		if (err != nil) != tc.err || (err == nil && got.String() != tc.want) {
			t.Errorf("%q %d %v: %v %v", tc.shard, tc.count, tc.env, got, err)
		}
	}
}

// TestJobManifest decodes the emitted manifest strictly with the API's own
// types: an Indexed Job of M completions whose pods sweep the ConfigMap's
// list.
func TestJobManifest(t *testing.T) {
	j := sweep.Job{Name: "nightly", Namespace: "security", Image: "ghcr.io/mlwarden/mlwarden@sha256:" + strings.Repeat("a", 64),
		Shards: 16, Parallelism: 4, Targets: []string{"registry:r.example/a:1", "hf:org/m"}, Args: []string{"--checks=secrets,models"},
		Config: []byte("fail-on: medium\n"), Secret: "mlwarden-cache", PVC: "reports"}
	data, err := j.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs [][]byte
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, js)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents:\n%s", len(docs), data)
	}
	var cm corev1.ConfigMap
	if errs, err := sigsjson.UnmarshalStrict(docs[0], &cm); err != nil || len(errs) > 0 {
		t.Fatalf("ConfigMap: %v %v", err, errs)
	}
	var job batchv1.Job
	if errs, err := sigsjson.UnmarshalStrict(docs[1], &job); err != nil || len(errs) > 0 {
		t.Fatalf("Job: %v %v\n%s", err, errs, data)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Namespace != "security" {
		t.Errorf("job %s %s in %q", job.APIVersion, job.Kind, job.Namespace)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 16 || *s.Parallelism != 4 {
		t.Errorf("spec %+v", s)
	}
	if cm.Data["targets.txt"] != "registry:r.example/a:1\nhf:org/m\n" || cm.Data["config.yaml"] != "fail-on: medium\n" {
		t.Errorf("configmap %q", cm.Data)
	}
	c := s.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"sweep @/etc/mlwarden-sweep/targets.txt", "--shards 16", "--fail-on none", "--config /etc/mlwarden-sweep/config.yaml", "--report-dir /reports", "--checks=secrets,models"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if c.EnvFrom[0].SecretRef.Name != "mlwarden-cache" || s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container %+v", c)
	}
	if _, err := (sweep.Job{Name: "x", Image: "i", Shards: 1, Targets: []string{strings.Repeat("x", 2<<20)}}).Manifest(); err == nil {
		t.Error("a list larger than a ConfigMap: no error")
	}
}

// fakeCatalog is a registry on loopback whose catalog and tags lists page
// as the test says: names per page, pages before the last (0: forever,
// as far as a lister goes: stop caps it), and extra bytes padding each
// page. It counts the pages it served.
type fakeCatalog struct {
	names, pages, stop, pad int
	served                  atomic.Int64
}

func (f *fakeCatalog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v2/" {
		return
	}
	f.served.Add(1)
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	last := (f.pages > 0 && page+1 >= f.pages) || (f.stop > 0 && page+1 >= f.stop)
	if !last {
		w.Header().Set("Link", fmt.Sprintf(`<%s?page=%d>; rel="next"`, r.URL.Path, page+1))
	}
	names := make([]string, f.names)
	for i := range names {
		names[i] = fmt.Sprintf("repo-%06d-%04d", page, i)
	}
	pad := strings.Repeat(" ", f.pad)
	if strings.HasSuffix(r.URL.Path, "/tags/list") {
		json.NewEncoder(w).Encode(map[string]any{"name": "x", "tags": names, "pad": pad})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"repositories": names, "pad": pad})
}

// TestListRegistryBounded: a registry whose catalog or tags list pages
// forever, or sends one endless page, ends the listing with an error at
// the listing's bounds, page by page — never after reading it all (issue
// 37, item 24: an endless catalog took sweep to 4 GB).
func TestListRegistryBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pattern string // after registry:HOST/
		fake    *fakeCatalog
		max     int
		want    string
		most    int // pages the lister may have read
	}{
		{"endless catalog, nothing matches", "nomatch-*", &fakeCatalog{names: 10, stop: 1000}, 0, "more than 20 pages", 21},
		{"endless catalog, many names", "nomatch-*", &fakeCatalog{names: 400, stop: 1000}, 0, "more than 1000 repositories and tags", 4},
		{"one huge catalog page", "nomatch-*", &fakeCatalog{names: 1, pages: 1, pad: 1 << 20}, 0, "a page larger than", 1},
		{"endless tags list, every tag matches", "repo:*", &fakeCatalog{names: 40, stop: 1000}, 100, "more than 100 targets", 3},
		{"endless tags list, no tag matches", "repo:nomatch-*", &fakeCatalog{names: 10, stop: 1000}, 0, "more than 20 pages", 21},
		{"pages whose bytes add up", "nomatch-*", &fakeCatalog{names: 1, stop: 1000, pad: 30 << 10}, 0, "more than 262144 bytes", 10},
		{"a bounded catalog and tags lists", "repo-*:nomatch", &fakeCatalog{names: 5, pages: 3}, 0, "", 3 + 15*3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.fake)
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			l := &sweep.Lister{MaxTargets: tc.max}
			sweep.SetListBounds(l, 20, 64<<10, 256<<10, 1000)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			got, err := l.List(ctx, nil, "registry:"+host+"/"+tc.pattern)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %d targets, error %v; want an error saying %q", len(got), err, tc.want)
			}
			if n := tc.fake.served.Load(); n > int64(tc.most) {
				t.Errorf("read %d pages, want at most %d", n, tc.most)
			}
		})
	}
}

// TestListSilentServer: a registry or Hub that accepts connections and
// never answers ends the listing within twice the network bound, as the
// sources' requests do (issue 37, item 12).
func TestListSilentServer(t *testing.T) {
	l, err := faultproxy.Listener()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	const bound = 300 * time.Millisecond
	for _, tc := range []struct {
		name, pattern string
		lister        *sweep.Lister
	}{
		{"registry catalog", "registry:" + addr + "/org/*", &sweep.Lister{NetworkTimeout: bound}},
		{"registry tags", "registry:" + addr + "/org/app:v*", &sweep.Lister{NetworkTimeout: bound}},
		{"Hub listing", "hf:org/*", &sweep.Lister{NetworkTimeout: bound, HubEndpoint: "http://" + addr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err := tc.lister.List(ctx, nil, tc.pattern)
			took := time.Since(start)
			t.Logf("%s: %v", took, err)
			if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") {
				t.Errorf("error %v, want the bound's", err)
			}
			if took > 3*bound {
				t.Errorf("took %s", took)
			}
		})
	}
}
