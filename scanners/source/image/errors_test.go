//go:build !mlwarden_sbatch

package image

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
)

// imgBlobPath is the file of layer i's blob in an OCI layout.
func imgBlobPath(t *testing.T, dir string, img v1.Image, i int) string {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ls[i].Digest()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "blobs", d.Algorithm, d.Hex)
}

func TestImageBrokenLayers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, file string, other []byte)
		want   string
	}{
		{"truncated", func(t *testing.T, file string, _ []byte) {
			b, _ := os.ReadFile(file)
			os.WriteFile(file, b[:len(b)/2], 0o644)
		}, "layer 3/4 sha256:"},
		{"corrupt", func(t *testing.T, file string, _ []byte) {
			b, _ := os.ReadFile(file)
			b[len(b)/2] ^= 0xff
			os.WriteFile(file, b, 0o644)
		}, "layer 3/4 sha256:"},
		// Another layer's blob in its place: without the cache the diff ID
		// check finds it (the blob digest is taken only where the cache
		// needs it: TestImageLayoutBlobDigest).
		{"digest mismatch", func(t *testing.T, file string, other []byte) {
			os.WriteFile(file, other, 0o644)
		}, "diff ID mismatch"},
		{"missing", func(t *testing.T, file string, _ []byte) {
			os.Remove(file)
		}, "layer 3/4 sha256:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := imgTestImage(t, runtime.GOARCH)
			dir := imgWriteOCI(t, f.img, nil)
			other, err := os.ReadFile(imgBlobPath(t, dir, f.img, 1))
			if err != nil {
				t.Fatal(err)
			}
			tc.break_(t, imgBlobPath(t, dir, f.img, 2), other)
			res, _ := imgScan(t, SchemeOCI, dir, Options{})
			if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, tc.want) || strings.Contains(res.Errors[0].Error(), "\n") {
				t.Fatalf("errors: %s", imgDump(res))
			}
			if !strings.HasPrefix(res.Errors[0].Error(), "oci:"+dir+": layer 3/4") {
				t.Errorf("error does not name image and layer first: %s", res.Errors[0].Error())
			}
			// The other layers are still scanned and reported.
			if len(imgFindingsAt(res, "/app/.env")) != 1 || len(imgFindingsAt(res, ConfigPath)) == 0 {
				t.Errorf("findings of the other layers missing:\n%s", imgDump(res))
			}
		})
	}
}

// A layout blob's own digest is checked where the layer's result may be
// cached (the key holds it, and a hit trusts it without decompressing), and
// not otherwise: there the diff ID pins every byte scanned, so a blob
// gzipped anew over the same tar scans as the original, while other content
// is a diff ID mismatch either way.
func TestImageLayoutBlobDigest(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	regzip := func(t *testing.T, file string) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&out, gzip.NoCompression)
		zw.Comment = "gzipped anew"
		zw.Write(tr)
		zw.Close()
		if bytes.Equal(out.Bytes(), b) {
			t.Fatal("gzipped anew to the same bytes")
		}
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		cache  bool
		break_ func(t *testing.T, file, other string)
		want   string // "": no error
	}{
		{"regzipped, no cache", false, func(t *testing.T, file, _ string) { regzip(t, file) }, ""},
		{"regzipped, cache", true, func(t *testing.T, file, _ string) { regzip(t, file) }, "digest mismatch"},
		{"other layer, no cache", false, imgCopyFile, "diff ID mismatch"},
		{"other layer, cache", true, imgCopyFile, "digest mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := imgWriteOCI(t, f.img, nil)
			want := imgFindingsAt(imgScanOK(t, dir), "/app/.env")
			tc.break_(t, imgBlobPath(t, dir, f.img, 2), imgBlobPath(t, dir, f.img, 1))
			o := Options{}
			if tc.cache {
				o = Options{RulesVersion: "test-1", CacheDir: t.TempDir()}
			}
			for run := range 2 { // the second run would replay a layer cached wrongly
				res, _ := imgScan(t, SchemeOCI, dir, o)
				switch {
				case tc.want == "" && len(res.Errors) > 0:
					t.Fatalf("run %d: errors: %s", run, imgDump(res))
				case tc.want != "" && (len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, tc.want)):
					t.Fatalf("run %d: want one error %q: %s", run, tc.want, imgDump(res))
				case tc.want == "" && len(imgFindingsAt(res, "/app/.env")) != len(want):
					t.Fatalf("run %d: findings differ from the original blob's:\n%s", run, imgDump(res))
				}
			}
		})
	}
}

// imgCopyFile writes the content of from over file.
func imgCopyFile(t *testing.T, file, from string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// imgScanOK scans a layout without the cache and fails on any error.
func imgScanOK(t *testing.T, dir string) *scanners.Result {
	t.Helper()
	res, _ := imgScan(t, SchemeOCI, dir, Options{})
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %s", imgDump(res))
	}
	return res
}

func TestImageBounds(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	dir := imgWriteOCI(t, f.img, nil)
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{MaxEntries: 2}, "more than 2 tar entries"},
		{Options{MaxLayerBytes: 1500}, "larger than 1500 bytes decompressed"},
	} {
		res, _ := imgScan(t, SchemeOCI, dir, tc.o)
		if len(res.Errors) == 0 || !strings.Contains(res.Errors[0].Message, tc.want) {
			t.Errorf("%+v: errors %s", tc.o, imgDump(res))
		}
	}
}

func TestImageOpenErrors(t *testing.T) {
	for _, tc := range []struct{ scheme, ref, want string }{
		{SchemeRegistry, "UPPER/Case", "bad image reference"},
		{SchemeOCI, "/nonexistent/layout", "no such file"},
		{SchemeDockerArchive, t.TempDir(), "a docker archive is a file"},
		{"ftp", "x", "unknown image scheme"},
	} {
		if _, err := Open(context.Background(), tc.scheme, tc.ref, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:%s: %v", tc.scheme, tc.ref, err)
		}
	}
	if _, err := Open(context.Background(), SchemeRegistry, "x", Options{Platform: "linux/"}); err == nil {
		t.Error("bad platform accepted")
	}
}

// A registry that refuses everything: the error says unauthorized and names
// the image.
func TestImageRegistryUnauthorized(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
	}))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/private/model:1"
	res, _ := imgScan(t, SchemeRegistry, ref, Options{})
	if len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0].Error(), ref+": unauthorized at 127.0.0.1:") {
		t.Errorf("errors: %s", imgDump(res))
	}
}

func TestImageRegistryNotFound(t *testing.T) {
	reg := registrytest.Registry(t)
	res, _ := imgScan(t, SchemeRegistry, reg+"/mlwarden/absent:nope", Options{})
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "not found at "+reg) {
		t.Errorf("errors: %s", imgDump(res))
	}
}

func TestImageRegistryErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&transport.Error{StatusCode: 429}, "rate-limited by r.test"},
		{&transport.Error{StatusCode: 403}, "unauthorized at r.test"},
		{&transport.Error{StatusCode: 404, Errors: []transport.Diagnostic{{Code: transport.ManifestUnknownErrorCode}}}, "not found at r.test"},
		{errors.New("a\nb"), "a b"},
	} {
		got := imgRegistryError("r.test", tc.err).Error()
		if !strings.Contains(got, tc.want) || strings.Contains(got, "\n") {
			t.Errorf("%v: %q", tc.err, got)
		}
	}
}

// imgResultTestSink is a Sink that implements imgResultSink, as the
// dispatcher's sink is asked to: it runs scanners itself.
type imgResultTestSink struct {
	scs      []scanners.Scanner
	mu       sync.Mutex
	findings []scanners.Finding
	errs     []scanners.Error
	replayed int
	scanned  int
}

func (s *imgResultTestSink) Artifact(a *scanners.Artifact, r io.Reader) error {
	_, err := s.ArtifactResult(a, r)
	return err
}

func (s *imgResultTestSink) ArtifactResult(a *scanners.Artifact, r io.Reader) (scanners.Record, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		e := scanners.Error{Target: a.Target, Path: a.Path, Message: err.Error()}
		s.Error(e)
		return scanners.Record{Errors: []scanners.Error{e}}, nil
	}
	var out []scanners.Finding
	for _, sc := range s.scs {
		fs, _ := scanners.ScanBytes(context.Background(), sc, a, data)
		out = append(out, fs...)
	}
	s.mu.Lock()
	s.findings = append(s.findings, out...)
	s.scanned++
	s.mu.Unlock()
	return scanners.Record{Findings: out}, nil
}

func (s *imgResultTestSink) Replay(target string, rec scanners.Record) {
	s.mu.Lock()
	for _, f := range rec.Findings {
		f.Target = target
		s.findings = append(s.findings, f)
	}
	s.replayed += len(rec.Findings)
	s.mu.Unlock()
}

func (s *imgResultTestSink) Error(e scanners.Error) {
	s.mu.Lock()
	s.errs = append(s.errs, e)
	s.mu.Unlock()
}

func (s *imgResultTestSink) fingerprints() []string {
	var out []string
	for _, f := range s.findings {
		if f.Fingerprint == "" {
			f.Fingerprint = scanners.ComputeFingerprint(&f)
		}
		out = append(out, f.Fingerprint+" "+f.Target+" "+f.Message)
	}
	slices.Sort(out)
	return out
}

func TestImageCache(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	dir := imgWriteOCI(t, f.img, nil)
	o := Options{RulesVersion: "test-1", CacheDir: t.TempDir()}
	scan := func(dir string, o Options) *imgResultTestSink {
		t.Helper()
		src, err := Open(context.Background(), SchemeOCI, dir, o)
		if err != nil {
			t.Fatal(err)
		}
		s := &imgResultTestSink{scs: []scanners.Scanner{newImgRecorder()}}
		if err := src.Walk(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if len(s.errs) > 0 {
			t.Fatalf("errors %v", s.errs)
		}
		return s
	}
	cold := scan(dir, o)
	if cold.replayed != 0 || cold.scanned != 7 {
		t.Fatalf("cold: replayed %d scanned %d", cold.replayed, cold.scanned)
	}
	// The warm scan decompresses and scans no layer (it hashes a layout's
	// blobs: they are files anyone can change).
	warm := scan(dir, o)
	if warm.scanned != 1 || warm.replayed == 0 { // only the config is scanned
		t.Errorf("warm: replayed %d scanned %d", warm.replayed, warm.scanned)
	}
	if c, w := cold.fingerprints(), warm.fingerprints(); !slices.Equal(c, w) {
		t.Errorf("warm findings differ:\ncold %q\nwarm %q", c, w)
	}
	// A blob changed on disk is no hit: it is read, and its digest fails.
	p := imgBlobPath(t, dir, f.img, 0)
	data, _ := os.ReadFile(p)
	data[len(data)/2] ^= 0xff
	os.WriteFile(p, data, 0o644)
	src, _ := Open(context.Background(), SchemeOCI, dir, o)
	tampered := &imgResultTestSink{scs: []scanners.Scanner{newImgRecorder()}}
	src.Walk(context.Background(), tampered)
	if len(tampered.errs) == 0 {
		t.Errorf("a tampered layout blob replayed its cached findings (replayed %d)", tampered.replayed)
	}
	// Another rules version, or NoCache, misses.
	for _, o2 := range []Options{{RulesVersion: "test-2", CacheDir: o.CacheDir}, {RulesVersion: "test-1", CacheDir: o.CacheDir, NoCache: true}} {
		src, _ := Open(context.Background(), SchemeOCI, dir, o2)
		s := &imgResultTestSink{scs: []scanners.Scanner{newImgRecorder()}}
		src.Walk(context.Background(), s)
		if s.replayed != 0 || len(s.errs) == 0 {
			t.Errorf("%+v: replayed %d, errors %v", o2, s.replayed, s.errs)
		}
	}
}

// A shared base layer whose file is deleted only in the first image: the
// second image must not replay the "deleted" note.
func TestImageCacheNotes(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	ls, _ := f.img.Layers()
	base := imgWriteOCI(t, imgTestImageFrom(t, ls[0]), nil)
	full := imgWriteOCI(t, f.img, nil)
	o := Options{RulesVersion: "test-1", CacheDir: t.TempDir()}
	for _, dir := range []string{full, base} {
		src, _ := Open(context.Background(), SchemeOCI, dir, o)
		s := &imgResultTestSink{scs: []scanners.Scanner{newImgRecorder()}}
		if err := src.Walk(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		for _, fd := range s.findings {
			deleted := strings.Contains(fd.Message, "deleted in layer 2")
			if fd.Path == "/app/.env" && deleted != (dir == full) {
				t.Errorf("%s: %q", dir, fd.Message)
			}
		}
	}
}

func imgTestImageFrom(t *testing.T, l v1.Layer) v1.Image {
	t.Helper()
	img, err := imgAppend(l)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// imgFuzzLayer serves bytes as a layer blob.
type imgFuzzLayer struct{ data []byte }

func (l imgFuzzLayer) Digest() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}, nil
}
func (l imgFuzzLayer) DiffID() (v1.Hash, error) { return l.Digest() }
func (l imgFuzzLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.data)), nil
}
func (l imgFuzzLayer) Uncompressed() (io.ReadCloser, error) { return l.Compressed() }
func (l imgFuzzLayer) Size() (int64, error)                 { return int64(len(l.data)), nil }
func (l imgFuzzLayer) MediaType() (types.MediaType, error)  { return types.OCILayer, nil }

type imgNopSink struct{}

func (imgNopSink) Artifact(a *scanners.Artifact, r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
func (imgNopSink) Error(scanners.Error) {}

// FuzzImageLayer feeds arbitrary blobs (gzip, zstd or plain tar) through the
// layer reader and the tar walk: no panic, and bounds hold.
func FuzzImageLayer(f *testing.F) {
	fx := imgTestImage(f, runtime.GOARCH)
	ls, _ := fx.img.Layers()
	for _, l := range ls {
		rc, _ := l.Compressed()
		b, _ := io.ReadAll(rc)
		f.Add(b)
		rc, _ = l.Uncompressed()
		b, _ = io.ReadAll(rc)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &imgSource{scheme: SchemeRegistry, opts: Options{MaxEntries: 1000, MaxLayerBytes: 1 << 20}.withDefaults()}
		w := &imgWalker{src: s, sink: imgNopSink{}, opts: s.opts}
		j := &imgLayerJob{layer: imgFuzzLayer{data}, diffID: "sha256:" + strings.Repeat("0", 64), count: 1}
		r, err := w.open(j)
		if err != nil {
			return
		}
		defer r.Close()
		var g errgroup.Group
		h := newImgHidden()
		ev, _ := w.walkLayer(context.Background(), j, r, h, &g, nil, false, &imgStop{})
		g.Wait()
		h.merge(0, ev)
		for p := range ev.m {
			h.note(p)
		}
	})
}

// imgStopSink ends the walk at its first file, as the dispatcher's sink does
// when the context is cancelled.
type imgStopSink struct{ imgNopSink }

func (imgStopSink) Artifact(a *scanners.Artifact, r io.Reader) error {
	if a.Kind == scanners.ArtifactFile {
		return context.Canceled
	}
	return nil
}

func TestImageWalkStops(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	dir := imgWriteOCI(t, f.img, nil)
	src, err := Open(context.Background(), SchemeOCI, dir, Options{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Walk(context.Background(), imgStopSink{}) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Walk = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Walk did not stop")
	}
}
