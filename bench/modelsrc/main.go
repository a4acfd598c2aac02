// Command modelsrc measures what scanning a model where it lives costs:
// a Hugging Face Hub repository (internal/hubtest on loopback) of a 4 GiB
// safetensors file, a 1 GiB PyTorch checkpoint (torch's own pickle and
// directory, 300 storages) and the usual small files, generated sparse on
// disk; and, with -registry, the same files as a CNCF ModelPack artifact
// (raw layers) in a registry, reached through a proxy that counts bytes.
// It prints the bytes downloaded and the wall time of `mlwarden scan`
// (median of -runs) against the repository's size and against a full
// download of it — what a scanner that needs the files on disk first
// (hf download, then scan) fetches — and the ratios.
//
//	go build -o /tmp/mlwarden ./cmd/mlwarden
//	go run ./bench/modelsrc -mlwarden /tmp/mlwarden [-registry 127.0.0.1:5000]
//
// bench/model-sources.sh does both, with a registry from .ci/registry.sh.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

func main() {
	bin := flag.String("mlwarden", "", "the mlwarden binary (go build -o … ./cmd/mlwarden)")
	dir := flag.String("dir", "", "where to write the repository (default: a temporary directory)")
	stGiB := flag.Float64("safetensors-gib", 4, "size of model.safetensors")
	ckGiB := flag.Float64("checkpoint-gib", 1, "size of pytorch_model.bin")
	runs := flag.Int("runs", 3, "scans per measurement (the median is printed)")
	reg := flag.String("registry", "", "host:port of a registry to push the ModelPack artifact to (none: skip it)")
	ckpt := flag.String("checkpoint", "scanners/source/hf/testdata/checkpoint.pt", "the torch checkpoint whose storages are inflated")
	flag.Parse()
	if *bin == "" {
		log.Fatal("-mlwarden is required")
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "modelsrc-")
		check(err)
		defer os.RemoveAll(d)
		*dir = d
	}
	repo := filepath.Join(*dir, "repo")
	tensors := generate(repo, *ckpt, int64(*stGiB*(1<<30)), int64(*ckGiB*(1<<30)))
	files, err := hubtest.FromDirUnhashed(repo)
	check(err)
	var total int64
	for _, f := range files {
		total += f.Size
	}
	fmt.Printf("repository: %s in %d files (model.safetensors %s, pytorch_model.bin %s with %d storages), sparse on disk\n",
		gib(total), len(files), gib(int64(*stGiB*(1<<30))), gib(int64(*ckGiB*(1<<30))), len(tensors))

	srv := hubtest.Start()
	defer srv.Close()
	commit := srv.AddFiles("bench/big", files)
	target := "hf:bench/big@" + commit
	env := append(os.Environ(), "HF_ENDPOINT="+srv.Endpoint(), "HF_TOKEN=", "HF_HOME="+*dir)
	var walls []float64
	var st hubtest.Stats
	var notes []string
	for range *runs {
		srv.ResetStats()
		w, n := scan(*bin, env, target)
		walls = append(walls, w)
		st, notes = srv.Stats(), n
	}
	var tensorBytes int64
	for _, r := range srv.Served("pytorch_model.bin") {
		for _, d := range tensors {
			tensorBytes += max(0, min(r[1], d[1])-max(r[0], d[0]))
		}
	}
	hubBytes := st.FileBytes + st.APIBytes
	fmt.Printf("mlwarden scan %s: median wall %.2f s of %d runs %v\n", target, median(walls), *runs, walls)
	fmt.Printf("  downloaded %s (%.3f%% of the repository; files %s, API %s) in %d requests (%d ranged); checkpoint tensor data fetched: %s\n",
		mib(hubBytes), pct(hubBytes, total), mib(st.FileBytes), kib(st.APIBytes), st.Requests, st.RangeRequests, kib(tensorBytes))
	for _, n := range notes {
		fmt.Printf("  note: %s\n", n)
	}
	full, fullWall := fullDownload(srv, files)
	fmt.Printf("full download of the repository (hf download, then a scan of the files): %s, %.2f s\n", gib(full), fullWall)
	fmt.Printf("  ratio mlwarden/full download: bytes %.5f, wall time %.3f\n", float64(hubBytes)/float64(full), median(walls)/fullWall)
	var disk []float64
	for range *runs {
		w, _ := scan(*bin, env, repo)
		disk = append(disk, w)
	}
	fmt.Printf("mlwarden scan of the same files on disk: median wall %.2f s %v\n", median(disk), disk)

	if *reg == "" {
		return
	}
	modelPack(*bin, *reg, repo, files, *runs)
}

// generate writes the repository and returns where the checkpoint's
// storages' data is.
func generate(dir, ckpt string, stSize, ckSize int64) [][2]int64 {
	check(os.MkdirAll(dir, 0o755))
	check(hubtest.SparseSafetensors(filepath.Join(dir, "model.safetensors"), stSize, 291))
	tensors, err := hubtest.InflateCheckpoint(ckpt, filepath.Join(dir, "pytorch_model.bin"), ckSize)
	check(err)
	var vocab strings.Builder
	vocab.WriteString(`{"version": "1.0", "model": {"type": "BPE", "vocab": {`)
	for i := range 32000 {
		fmt.Fprintf(&vocab, "%q: %d, ", fmt.Sprintf("tok%05d", i), i)
	}
	vocab.WriteString(`"end": 32000}}}`)
	small := map[string]string{
		"config.json":             `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float16", "num_hidden_layers": 50}`,
		"generation_config.json":  `{"do_sample": true, "temperature": 0.6, "top_p": 0.9}`,
		"tokenizer_config.json":   `{"add_bos_token": true, "chat_template": "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"}`,
		"special_tokens_map.json": `{"bos_token": "<s>", "eos_token": "</s>"}`,
		"tokenizer.json":          vocab.String(),
		"README.md":               "---\nlicense: llama3\nlibrary_name: transformers\n---\n# bench model\n\nGenerated by bench/modelsrc.\n",
		".gitattributes":          "*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.bin filter=lfs diff=lfs merge=lfs -text\n",
	}
	for n, c := range small {
		check(os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644))
	}
	return tensors
}

// scan runs mlwarden on target and returns the wall time and the
// target's notes.
func scan(bin string, env []string, target string) (float64, []string) {
	out, err := os.CreateTemp("", "modelsrc-report-*.json")
	check(err)
	out.Close()
	defer os.Remove(out.Name())
	cmd := exec.Command(bin, "scan", "--no-cache", "--format", "json", "--output", out.Name(), "--fail-on", "none", target)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Printf("scan %s: %v: %s (the report's errors follow)", target, err, stderr.String())
	}
	wall := time.Since(start).Seconds()
	data, err := os.ReadFile(out.Name())
	check(err)
	var rep struct {
		Targets []struct{ Notes []string }
		Errors  []struct{ Path, Message string }
	}
	check(json.Unmarshal(data, &rep))
	for _, e := range rep.Errors {
		log.Printf("  error: %s: %s", e.Path, e.Message)
	}
	if len(rep.Targets) == 0 {
		return wall, nil
	}
	return wall, rep.Targets[0].Notes
}

// fullDownload fetches every file whole, as a download before a scan
// does, and returns the bytes and the wall time.
func fullDownload(srv *hubtest.Server, files []hubtest.File) (int64, float64) {
	start := time.Now()
	var n int64
	for _, f := range files {
		resp, err := http.Get(srv.Endpoint() + "/bench/big/resolve/main/" + f.Path)
		check(err)
		m, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		check(err)
		n += m
	}
	return n, time.Since(start).Seconds()
}

// fileLayer is a file pushed as one raw layer, streamed from disk.
type fileLayer struct {
	path string
	mt   types.MediaType
	h    v1.Hash
	size int64
}

func newFileLayer(p string, mt types.MediaType) *fileLayer {
	f, err := os.Open(p)
	check(err)
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	check(err)
	return &fileLayer{path: p, mt: mt, h: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}, size: n}
}

func (l *fileLayer) Digest() (v1.Hash, error)             { return l.h, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)             { return l.h, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) { return os.Open(l.path) }
func (l *fileLayer) Size() (int64, error)                 { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error)  { return l.mt, nil }

type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }

func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// modelPack pushes the files as a ModelPack artifact of raw layers and
// measures a scan of it through a byte-counting proxy.
func modelPack(bin, reg, repo string, files []hubtest.File, runs int) {
	u, _ := url.Parse("http://" + reg)
	var served atomic.Int64
	var requests atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.ServeHTTP(countingWriter{w, &served}, r)
	}))
	defer proxy.Close()
	host := strings.TrimPrefix(proxy.URL, "http://")
	ref, err := name.ParseReference(reg + "/bench/modelpack:v1")
	check(err)
	cfg := []byte(`{"descriptor":{"name":"bench"},"modelfs":{"type":"layers","diffIds":[]},"config":{"format":"safetensors"}}`)
	cfgLayer := static.NewLayer(cfg, image.MediaModelPackConfig)
	check(remote.WriteLayer(ref.Context(), cfgLayer))
	cd, _ := cfgLayer.Digest()
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: image.MediaModelPackManifest,
		Config: v1.Descriptor{MediaType: image.MediaModelPackConfig, Size: int64(len(cfg)), Digest: cd}}
	var total int64
	start := time.Now()
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, f.Path)
	}
	slices.Sort(names)
	for _, n := range names {
		mt := types.MediaType("application/vnd.cncf.model.weight.v1.raw")
		if !strings.HasSuffix(n, ".safetensors") && !strings.HasSuffix(n, ".bin") {
			mt = "application/vnd.cncf.model.weight.config.v1.raw"
		}
		l := newFileLayer(filepath.Join(repo, n), mt)
		check(remote.WriteLayer(ref.Context(), l))
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: mt, Size: l.size, Digest: l.h, Annotations: map[string]string{image.AnnotationModelPackPath: n}})
		total += l.size
	}
	raw, _ := json.Marshal(m)
	check(remote.Put(ref, rawManifest(raw)))
	fmt.Printf("ModelPack artifact: %s in %d raw layers, pushed to %s in %.1f s; scanned through a counting proxy at %s\n", gib(total), len(m.Layers), reg, time.Since(start).Seconds(), host)
	target := "registry:" + host + "/bench/modelpack:v1"
	var walls []float64
	var notes []string
	var bytes, reqs int64
	for range runs {
		served.Store(0)
		requests.Store(0)
		w, n := scan(bin, os.Environ(), target)
		walls = append(walls, w)
		notes, bytes, reqs = n, served.Load(), requests.Load()
	}
	fmt.Printf("mlwarden scan %s: median wall %.2f s of %d runs %v\n", target, median(walls), runs, walls)
	fmt.Printf("  downloaded %s through the proxy (%.3f%% of the artifact) in %d requests\n", mib(bytes), pct(bytes, total), reqs)
	for _, n := range notes {
		fmt.Printf("  note: %s\n", n)
	}
	// A full pull: every blob.
	served.Store(0)
	start = time.Now()
	pref, err := name.ParseReference(host+"/bench/modelpack:v1", name.Insecure)
	check(err)
	img, err := remote.Image(pref)
	check(err)
	layers, err := img.Layers()
	check(err)
	for _, l := range layers {
		rc, err := l.Compressed()
		check(err)
		_, err = io.Copy(io.Discard, rc)
		check(err)
		rc.Close()
	}
	fullWall := time.Since(start).Seconds()
	fmt.Printf("full pull of the artifact (docker model pull / modctl pull, then a scan): %s, %.2f s\n", mib(served.Load()), fullWall)
	fmt.Printf("  ratio mlwarden/full pull: bytes %.5f, wall time %.3f\n", float64(bytes)/float64(served.Load()), median(walls)/fullWall)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func pct(a, b int64) float64 { return 100 * float64(a) / float64(b) }
func gib(n int64) string     { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }
func mib(n int64) string     { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }
func kib(n int64) string     { return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10)) }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
