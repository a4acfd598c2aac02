package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

var (
	notScanned = scanners.Rule{ID: "secrets/archive-not-scanned", Check: scanners.CheckSecrets, Severity: scanners.SeverityLow, Title: "t", Why: "w", Fix: "Fix it."}
	escapes    = scanners.Rule{ID: "secrets/archive-member-escapes", Check: scanners.CheckSecrets, Severity: scanners.SeverityMedium, Title: "t", Why: "w", Fix: "Fix it."}
)

// collect is a sink that keeps every member and its content.
type collect struct {
	mu      sync.Mutex
	members map[string]string
	errs    []scanners.Error
}

func (c *collect) Artifact(a *scanners.Artifact, r io.Reader) error {
	b, err := io.ReadAll(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.members == nil {
		c.members = map[string]string{}
	}
	if err != nil {
		c.errs = append(c.errs, scanners.Error{Path: a.Path, Message: err.Error()})
	}
	if a.Container == "" || !strings.HasPrefix(a.Path, a.Container+"!") || a.FS != nil {
		c.errs = append(c.errs, scanners.Error{Path: a.Path, Message: "member without its container"})
	}
	c.members[a.Path] = string(b)
	return nil
}

func (c *collect) Error(e scanners.Error) { c.errs = append(c.errs, e) }

func expand(t testing.TB, o Options, name string, data []byte) (*collect, []scanners.Finding, error) {
	t.Helper()
	o.NotScanned, o.Escapes = notScanned, &escapes
	x := New(o)
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: name, Size: int64(len(data))}
	head := data[:min(len(data), scanners.HeadSize)]
	if !x.Expands(a, head) {
		t.Fatalf("%s: not expanded", name)
	}
	c := &collect{}
	fs, err := x.Expand(context.Background(), a, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), c)
	return c, fs, err
}

type entry struct{ name, body string }

func zipOf(t testing.TB, es ...entry) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, e := range es {
		f, err := w.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(e.body))
	}
	w.Close()
	return b.Bytes()
}

func tarOf(t testing.TB, es ...entry) []byte {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, e := range es {
		if err := w.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	w.Close()
	return b.Bytes()
}

func gz(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func TestFormats(t *testing.T) {
	const env = "HF_TOKEN=placeholder\n"
	xzOf := func(data []byte) []byte {
		var b bytes.Buffer
		w, _ := xz.NewWriter(&b)
		w.Write(data)
		w.Close()
		return b.Bytes()
	}
	zstOf := func(data []byte) []byte {
		e, _ := zstd.NewWriter(nil)
		return e.EncodeAll(data, nil)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"dist/app.whl", zipOf(t, entry{"pkg/config.py", env}), "dist/app.whl!pkg/config.py"},
		{"lib/app.jar", zipOf(t, entry{"META-INF/app.properties", env}), "lib/app.jar!META-INF/app.properties"},
		{"src.tar", tarOf(t, entry{"./src/.env", env}), "src.tar!src/.env"},
		{"src.tar.gz", gz(tarOf(t, entry{"src/.env", env})), "src.tar.gz!src/.env"},
		{"src.tgz", gz(tarOf(t, entry{"src/.env", env})), "src.tgz!src/.env"},
		{"src.tar.xz", xzOf(tarOf(t, entry{"src/.env", env})), "src.tar.xz!src/.env"},
		{"src.tar.zst", zstOf(tarOf(t, entry{"src/.env", env})), "src.tar.zst!src/.env"},
		{"logs/run.log.gz", gz([]byte(env)), "logs/run.log.gz!run.log"},
		{"logs/run.log.xz", xzOf([]byte(env)), "logs/run.log.xz!run.log"},
		{"nested.tar.gz", gz(tarOf(t, entry{"inner.zip", string(zipOf(t, entry{"a/b.env", env}))})), "nested.tar.gz!inner.zip!a/b.env"},
	} {
		c, fs, err := expand(t, Options{}, tc.name, tc.data)
		if scannertest.DecoderMissing(fs) {
			continue // xz, zstd: not in mlwarden-sbatch's build
		}
		if err != nil || len(fs) != 0 || len(c.errs) != 0 {
			t.Errorf("%s: %v %v %v", tc.name, err, fs, c.errs)
		}
		if c.members[tc.want] != env || len(c.members) != 1 {
			t.Errorf("%s: members %v, want %s", tc.name, keys(c.members), tc.want)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestNotSilent: limits, encrypted members and unsupported formats are
// findings; limits also an error wrapping ErrIncomplete.
func TestNotSilent(t *testing.T) {
	deep := zipOf(t, entry{"f.env", "x"})
	for range 3 {
		deep = zipOf(t, entry{"in.zip", string(deep)})
	}
	many := zipOf(t, entry{"1", "a"}, entry{"2", "b"}, entry{"3", "c"}, entry{"4", "d"})
	enc := zipOf(t, entry{"secret.env", "x"})
	// Set the encryption flag in the local and central headers.
	enc[6] |= 1
	if i := bytes.Index(enc, []byte("PK\x01\x02")); i >= 0 {
		enc[i+8] |= 1
	}
	for _, tc := range []struct {
		name     string
		o        Options
		data     []byte
		evidence string
		limit    bool
	}{
		{"deep.zip", Options{MaxDepth: 2}, deep, "depth limit", true},
		{"many.zip", Options{MaxMembers: 3}, many, "member limit", true},
		{"big.tar.gz", Options{MaxSize: 1 << 20}, gz(tarOf(t, entry{"a", strings.Repeat("x", 2<<20)})), "size limit", true},
		{"bomb.gz", Options{}, gz(make([]byte, 80<<20)), "ratio limit", true},
		{"enc.zip", Options{}, enc, "encrypted member", false},
		{"a.rar", Options{}, append([]byte("Rar!\x1a\x07\x01\x00"), make([]byte, 64)...), "RAR archive", false},
		{"bad.zip", Options{}, []byte("PK\x03\x04garbage"), "zip corrupt", false},
	} {
		_, fs, err := expand(t, tc.o, tc.name, tc.data)
		if !slices.ContainsFunc(fs, func(f scanners.Finding) bool {
			return f.RuleID == notScanned.ID && f.Evidence == tc.evidence && strings.HasPrefix(f.Message, "Not scanned")
		}) {
			t.Errorf("%s: no %q finding in %+v", tc.name, tc.evidence, fs)
		}
		if got := errors.Is(err, scanners.ErrIncomplete); got != tc.limit {
			t.Errorf("%s: error %v, limit %v", tc.name, err, tc.limit)
		}
	}
}

// TestModelsLeftAlone: model containers and model members are the models
// check's.
func TestModelsLeftAlone(t *testing.T) {
	x := New(Options{NotScanned: notScanned})
	torch := zipOf(t, entry{"archive/data.pkl", "\x80\x02}q\x00."}, entry{"archive/version", "3\n"})
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"model.bin", torch},
		{"model", torch},
		{"weights.npz", zipOf(t, entry{"a.npy", "\x93NUMPY"})},
		{"arrays", zipOf(t, entry{"a.npy", "\x93NUMPY"})},
		{"m.keras", zipOf(t, entry{"metadata.json", `{"keras_version": "3.1"}`})},
		{"m.nemo", tarOf(t, entry{"model_config.yaml", "x: 1"})},
	} {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: tc.name}
		if x.Expands(a, tc.data) {
			t.Errorf("%s: expanded", tc.name)
		}
	}
	c, _, _ := expand(t, Options{}, "release.tar", tarOf(t, entry{"a.env", "x"}, entry{"blob", "\x80\x04\x95"}, entry{"w.safetensors", "{}"}))
	if len(c.members) != 1 || c.members["release.tar!a.env"] != "x" {
		t.Errorf("members %v", keys(c.members))
	}
	// A member is never expanded by the dispatcher (nesting is Expand's).
	if x.Expands(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: "a.zip!b.zip", Container: "a.zip"}, zipOf(t, entry{"c", "d"})) {
		t.Error("member expanded")
	}
}

// TestEscapingNames: a member name that climbs out is a finding and the
// member is still scanned, named inside the archive.
func TestEscapingNames(t *testing.T) {
	c, fs, err := expand(t, Options{}, "slip.zip", zipOf(t, entry{"../../etc/cron.d/x", "x"}, entry{"/abs.env", "y"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].RuleID != escapes.ID || fs[1].RuleID != escapes.ID {
		t.Errorf("findings %+v", fs)
	}
	if c.members["slip.zip!etc/cron.d/x"] != "x" || c.members["slip.zip!abs.env"] != "y" {
		t.Errorf("members %v", keys(c.members))
	}
}

// Test7z reads archives 7-Zip writes, when it is installed (CI installs
// p7zip-full).
func Test7z(t *testing.T) {
	bin, err := exec.LookPath("7z")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("7z not installed (p7zip-full)")
		}
		t.Skip("7z not installed (apt-get install p7zip-full)")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cfg.env"), []byte("HF_TOKEN=placeholder\n"), 0o644)
	out := filepath.Join(dir, "a.7z")
	if b, err := exec.Command(bin, "a", "-bd", out, filepath.Join(dir, "cfg.env")).CombinedOutput(); err != nil {
		t.Fatalf("7z: %v\n%s", err, b)
	}
	data, _ := os.ReadFile(out)
	c, fs, err := expand(t, Options{}, "a.7z", data)
	if scannertest.DecoderMissing(fs) {
		t.Skip("7z is not in mlwarden-sbatch's build")
	}
	if err != nil || len(fs) != 0 || c.members["a.7z!cfg.env"] != "HF_TOKEN=placeholder\n" {
		t.Errorf("%v %v %v", err, fs, keys(c.members))
	}
	// Encrypted: a finding, not silence.
	enc := filepath.Join(dir, "enc.7z")
	if b, err := exec.Command(bin, "a", "-bd", "-pnotapassword", enc, filepath.Join(dir, "cfg.env")).CombinedOutput(); err != nil {
		t.Fatalf("7z: %v\n%s", err, b)
	}
	data, _ = os.ReadFile(enc)
	_, fs, _ = expand(t, Options{}, "enc.7z", data)
	if len(fs) == 0 {
		t.Error("encrypted 7z: no finding")
	}
}

// FuzzExpand feeds any bytes as an archive with small limits: no panic, and
// every member is named inside its container.
func FuzzExpand(f *testing.F) {
	f.Add(zipOf(f, entry{"a.env", "x"}))
	f.Add(gz(tarOf(f, entry{"a/b.env", "x"}, entry{"c.zip", string(zipOf(f, entry{"d", "e"}))})))
	f.Add(gz([]byte("plain")))
	f.Add([]byte("7z\xbc\xaf\x27\x1c\x00\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x := New(Options{NotScanned: notScanned, Escapes: &escapes, MaxSize: 4 << 20, MaxMembers: 100, MaxDict: 1 << 20})
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "f"}
		if !x.Expands(a, data[:min(len(data), scanners.HeadSize)]) {
			return
		}
		c := &collect{}
		x.Expand(context.Background(), a, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), c)
		for p := range c.members {
			if !strings.HasPrefix(p, "f!") {
				t.Fatalf("member %q", p)
			}
		}
	})
}
