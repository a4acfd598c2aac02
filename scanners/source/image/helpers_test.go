//go:build !mlwarden_sbatch

package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/scanners"
)

// imgTestEntry is one tar entry of a test layer.
type imgTestEntry struct {
	name string
	body string
	typ  byte // 0: regular file
	link string
}

// imgTestLayer builds a layer from entries, compressed with comp.
func imgTestLayer(t testing.TB, comp compression.Compression, entries ...imgTestEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, ModTime: time.Unix(1700000000, 0), Typeflag: e.typ, Linkname: e.link}
		switch e.typ {
		case 0:
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		case tar.TypeDir:
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithCompression(comp))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// imgTestSecret returns a fake, format-valid-looking token made at test time
// from a seed (letters only, as Hugging Face tokens are), so that no
// credential is ever committed.
func imgTestSecret(prefix string, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b strings.Builder
	b.WriteString(prefix)
	for range 34 {
		b.WriteByte(abc[r.IntN(len(abc))])
	}
	return b.String()
}

// imgTestPickle is a protocol-2 pickle that calls builtins.print — a
// harmless stand-in for a malicious model.
func imgTestPickle() string {
	return "\x80\x02cbuiltins\nprint\nq\x00X\x05\x00\x00\x00helloq\x01\x85q\x02Rq\x03."
}

// imgTestFixture is the image the tests scan.
type imgTestFixture struct {
	img    v1.Image
	secret string // in a file a later layer deletes
	env    string // in ENV
}

// imgTestImage builds: layer 1 writes a secret file, a pickle and a
// symlink; layer 2 deletes the secret file (whiteout); layer 3 replaces the
// pickle and makes /opt opaque; layer 4 (zstd) adds a file.
func imgTestImage(t testing.TB, arch string) imgTestFixture {
	t.Helper()
	f := imgTestFixture{
		secret: imgTestSecret("hf_", 1),
		env:    imgTestSecret("hf_", 2),
	}
	l1 := imgTestLayer(t, compression.GZip,
		imgTestEntry{name: "app/", typ: tar.TypeDir},
		imgTestEntry{name: "app/.env", body: "HF_TOKEN=" + f.secret + "\n"},
		imgTestEntry{name: "app/model.pkl", body: imgTestPickle()},
		imgTestEntry{name: "app/latest.pkl", typ: tar.TypeSymlink, link: "model.pkl"},
		imgTestEntry{name: "opt/old/notes.txt", body: "SECRET-MARKER old notes\n"},
		imgTestEntry{name: "app/hard", typ: tar.TypeLink, link: "app/model.pkl"},
	)
	l2 := imgTestLayer(t, compression.GZip,
		imgTestEntry{name: "app/.wh..env", typ: tar.TypeReg},
	)
	l3 := imgTestLayer(t, compression.GZip,
		imgTestEntry{name: "app/model.pkl", body: "not a pickle any more"},
		imgTestEntry{name: "opt/.wh..wh..opq", typ: tar.TypeReg},
		imgTestEntry{name: "opt/new.txt", body: "new\n"},
	)
	l4 := imgTestLayer(t, compression.ZStd,
		imgTestEntry{name: "srv/run.sh", body: "#!/bin/sh\njupyter notebook --ip=0.0.0.0 --NotebookApp.token=''\n"},
	)
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: l1, History: v1.History{CreatedBy: "COPY app /app"}},
		mutate.Addendum{Layer: l2, History: v1.History{CreatedBy: "RUN rm /app/.env"}},
		mutate.Addendum{Layer: l3, History: v1.History{CreatedBy: "RUN fix"}},
		mutate.Addendum{History: v1.History{CreatedBy: "ENV HF_TOKEN=...", EmptyLayer: true}},
		mutate.Addendum{Layer: l4, History: v1.History{CreatedBy: "COPY run.sh /srv/"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Env = []string{"PATH=/usr/bin", "HF_TOKEN=" + f.env, "CUDA_VERSION=12.4.1"}
	cf.Config.Cmd = []string{"jupyter", "notebook", "--ip=0.0.0.0", "--NotebookApp.token="}
	cf.Config.User = "root"
	cf.Config.ExposedPorts = map[string]struct{}{"8888/tcp": {}}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.base.name": "registry.example.com/nvidia/pytorch:24.01-py3"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	f.img = img
	return f
}

// imgTestIndex is a two-platform index of the test image.
func imgTestIndex(t testing.TB) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		f := imgTestImage(t, arch)
		adds = append(adds, mutate.IndexAddendum{Add: f.img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	return mutate.AppendManifests(empty.Index, adds...)
}

// imgRecorder is a test scanner: it wants everything, records what it saw,
// and reports a finding for each line holding "hf_" or "SECRET-MARKER" (made
// with scanners.At, so that notes reach the message as with real checks).
type imgRecorder struct {
	mu   sync.Mutex
	seen map[string]imgSeen // key: path@layer
}

type imgSeen struct {
	a    scanners.Artifact
	body string
}

var imgRecRule = scanners.Rule{ID: "secrets/test-token", Check: scanners.CheckSecrets, Severity: scanners.SeverityCritical, Title: "test token"}

func newImgRecorder() *imgRecorder { return &imgRecorder{seen: map[string]imgSeen{}} }

func (r *imgRecorder) Check() string                                { return scanners.CheckSecrets }
func (r *imgRecorder) Rules() []scanners.Rule                       { return []scanners.Rule{imgRecRule} }
func (r *imgRecorder) Wants(a *scanners.Artifact, head []byte) bool { return true }
func (r *imgRecorder) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	data, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.seen[a.Path+"@"+a.Layer] = imgSeen{a: *a, body: string(data)}
	r.mu.Unlock()
	var fs []scanners.Finding
	for i, line := range strings.Split(string(data), "\n") {
		if j := strings.Index(line, "hf_"); j >= 0 || strings.Contains(line, "SECRET-MARKER") {
			f := scanners.At(a, imgRecRule, i+1, "test token in "+a.Path)
			if j >= 0 {
				tok := line[j:]
				if k := strings.IndexAny(tok, "\" ,"); k > 0 {
					tok = tok[:k]
				}
				f.Secret = tok
				f.Evidence = scanners.Redact(tok)
			}
			fs = append(fs, f)
		}
	}
	return fs, nil
}

// byPath returns what the recorder saw at path (in any layer), by layer index.
func (r *imgRecorder) byPath(p string) []imgSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []imgSeen
	for _, s := range r.seen {
		if s.a.Path == p {
			out = append(out, s)
		}
	}
	return out
}

func (r *imgRecorder) configs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.seen {
		if s.a.Kind == scanners.ArtifactImageConfig {
			out = append(out, s.a.Path)
		}
	}
	slices.Sort(out)
	return out
}

func (r *imgRecorder) paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.seen {
		out = append(out, k)
	}
	return out
}

// imgScan runs the dispatcher with a recorder over one image target.
func imgScan(t testing.TB, scheme, ref string, o Options) (*scanners.Result, *imgRecorder) {
	t.Helper()
	src, err := Open(context.Background(), scheme, ref, o)
	if err != nil {
		t.Fatal(err)
	}
	rec := newImgRecorder()
	res := scanners.NewDispatcher([]scanners.Scanner{rec}).Run(context.Background(), src)
	return res, rec
}

func imgFindingsAt(res *scanners.Result, path string) []scanners.Finding {
	var out []scanners.Finding
	for _, f := range res.Findings {
		if f.Path == path {
			out = append(out, f)
		}
	}
	return out
}

func imgDump(res *scanners.Result) string {
	var b strings.Builder
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "  finding %s %s:%d layer=%s %q\n", f.RuleID, f.Path, f.Line, imgShort(f.Layer), f.Message)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(&b, "  error %s\n", e.Error())
	}
	return b.String()
}

func imgAppend(ls ...v1.Layer) (v1.Image, error) {
	var adds []mutate.Addendum
	for _, l := range ls {
		adds = append(adds, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: "COPY app /app"}})
	}
	return mutate.Append(empty.Image, adds...)
}
