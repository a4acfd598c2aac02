package scannertest

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/mlwarden/mlwarden/scanners"
)

// neighbours is a check that reports, for every file, the files beside it
// that it can read through Artifact.FS, and records what it was handed.
type neighbours struct {
	mu   sync.Mutex
	seen []scanners.Artifact
	// also, when set, is called in Scan, while the target is open.
	also func(a *scanners.Artifact)
}

var neighbourRule = scanners.Rule{ID: "misconfig/neighbours", Check: scanners.CheckMisconfig, Title: "n", Why: "w"}

func (n *neighbours) Check() string                                { return scanners.CheckMisconfig }
func (n *neighbours) Rules() []scanners.Rule                       { return []scanners.Rule{neighbourRule} }
func (n *neighbours) Wants(a *scanners.Artifact, head []byte) bool { return true }
func (n *neighbours) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	n.mu.Lock()
	n.seen = append(n.seen, *a)
	n.mu.Unlock()
	if n.also != nil {
		n.also(a)
	}
	if a.FS == nil {
		return nil, nil
	}
	ents, err := fs.ReadDir(a.FS, pathDir(a.Path))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return []scanners.Finding{scanners.At(a, neighbourRule, 0, strings.Join(names, ","))}, nil
}

func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

func messages(fs []scanners.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path+": "+f.Message)
	}
	return out
}

func TestScan(t *testing.T) {
	n := &neighbours{}
	got := messages(Scan(t, map[string][]byte{
		"b/y.txt":     []byte("y"),
		"a.txt":       []byte("a"),
		"b/x.txt":     []byte("x"),
		".git/config": []byte("[core]"),
	}, n))
	want := []string{"a.txt: .git,a.txt,b", "b/x.txt: x.txt,y.txt", "b/y.txt: x.txt,y.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, a := range n.seen {
		if a.Target != "mem" || a.TargetKind != scanners.KindDir || a.Kind != scanners.ArtifactFile || a.Size != 1 || a.Mode != 0o644 {
			t.Errorf("artifact %+v", a)
		}
	}
}

func TestScanFSSkipsLinks(t *testing.T) {
	got := messages(ScanFS(t, fstest.MapFS{
		"model.bin": {Data: []byte("w")},
		"link":      {Data: []byte("model.bin"), Mode: fs.ModeSymlink},
	}, &neighbours{}))
	if want := []string{"model.bin: link,model.bin"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestScanDir(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	for name, body := range map[string]string{"w/a.bin": "alpha", "w/SHA256SUMS": "sums", "top.txt": "t"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "w", "out"))
	var mu sync.Mutex
	var problems []string
	n := &neighbours{also: func(a *scanners.Artifact) {
		mu.Lock()
		defer mu.Unlock()
		if a.Target != dir {
			problems = append(problems, "target "+a.Target)
		}
		// The FS is an os.Root's: it does not follow the link out, and
		// its files are read in place.
		if _, err := fs.ReadFile(a.FS, "w/out"); err == nil {
			problems = append(problems, a.Path+": read outside the root")
		}
		f, err := a.FS.Open(a.Path)
		if err != nil {
			problems = append(problems, err.Error())
			return
		}
		if _, ok := f.(io.ReaderAt); !ok {
			problems = append(problems, a.Path+": FS files are not io.ReaderAt")
		}
		f.Close()
	}}
	got := messages(ScanDir(t, dir, n))
	want := []string{"top.txt: top.txt,w", "w/SHA256SUMS: SHA256SUMS,a.bin,out", "w/a.bin: SHA256SUMS,a.bin,out"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestRunKeepsErrors(t *testing.T) {
	fsys := fstest.MapFS{"a.txt": {Data: []byte("a")}}
	res := Run(t, Source("t", fsys), &fake{check: scanners.CheckMisconfig, rules: []scanners.Rule{goodRule},
		scan: func(a *scanners.Artifact, data []byte) ([]scanners.Finding, error) { return nil, io.ErrUnexpectedEOF }})
	if len(res.Errors) != 1 || res.Errors[0].Path != "a.txt" || res.Targets[0].Name != "t" {
		t.Errorf("result %+v", res)
	}
}
