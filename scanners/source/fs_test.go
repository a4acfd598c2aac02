package source_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source"
)

// recorder is a Sink that keeps what it was handed.
type recorder struct {
	mu    sync.Mutex
	paths []string
	sizes map[string]int
	errs  []scanners.Error
}

func (r *recorder) Artifact(a *scanners.Artifact, rd io.Reader) error {
	data, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths = append(r.paths, a.Path)
	if r.sizes == nil {
		r.sizes = map[string]int{}
	}
	r.sizes[a.Path] = len(data)
	return nil
}

func (r *recorder) Error(e scanners.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, e)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func walk(t *testing.T, target string, o source.Options) *recorder {
	t.Helper()
	src, err := source.OpenFS(target, o)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if err := src.Walk(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rec.paths)
	return rec
}

func TestFSWalk(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(root, "a.sh"), "echo a\n")
	write(t, filepath.Join(root, "sub", "b.py"), "print(1)\n")
	write(t, filepath.Join(root, "empty"), "")
	write(t, filepath.Join(root, ".git", "config"), "[core]\n")
	write(t, filepath.Join(root, "big.bin"), strings.Repeat("x", 2000))
	write(t, filepath.Join(outside, "secret.txt"), "outside\n")
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link-out")))
	must(t, os.Symlink(outside, filepath.Join(root, "dir-out")))
	must(t, os.Symlink("a.sh", filepath.Join(root, "link-in")))
	must(t, os.Symlink(".", filepath.Join(root, "sub", "loop")))
	must(t, os.Symlink("..", filepath.Join(root, "sub", "up")))
	must(t, os.Symlink("missing", filepath.Join(root, "dangling")))
	must(t, os.Symlink("loop-b", filepath.Join(root, "loop-a")))
	must(t, os.Symlink("loop-a", filepath.Join(root, "loop-b")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))

	src, err := source.OpenFS(root, source.Options{MaxFileSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if err := src.Walk(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rec.paths)
	want := []string{"a.sh", "empty", "link-in", "sub/b.py"}
	if !slices.Equal(rec.paths, want) {
		t.Errorf("paths %v, want %v", rec.paths, want)
	}
	var msgs []string
	for _, e := range rec.errs {
		msgs = append(msgs, e.Path+": "+e.Message)
	}
	slices.Sort(msgs)
	if len(msgs) != 1 || !strings.HasPrefix(msgs[0], "big.bin: not scanned: 2000 bytes is over --max-file-size") {
		t.Errorf("errors %q", msgs)
	}
	// Links to nothing have no content: noted, not errors (exit 2).
	if n := src.Target().Notes; len(n) != 1 || !strings.Contains(n[0], "3 broken symlink(s) skipped") || !strings.Contains(n[0], "dangling, loop-a, loop-b") {
		t.Errorf("notes %q", n)
	}
	for _, m := range msgs {
		if strings.Contains(m, root) {
			t.Errorf("error repeats the absolute path: %q", m)
		}
	}
}

func TestFSSingleFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "job.sbatch")
	write(t, p, "#!/bin/bash\n")
	src, err := source.OpenFS(p, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k := src.Target().Kind; k != scanners.KindFile {
		t.Errorf("kind %s", k)
	}
	rec := &recorder{}
	if err := src.Walk(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.paths, []string{"job.sbatch"}) {
		t.Errorf("paths %v", rec.paths)
	}
}

func TestFSUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode; the --max-file-size case in TestFSWalk covers the error path")
	}
	root := t.TempDir()
	write(t, filepath.Join(root, "locked"), "x")
	must(t, os.Chmod(filepath.Join(root, "locked"), 0))
	rec := walk(t, root, source.Options{})
	if len(rec.errs) != 1 {
		t.Errorf("errors %v", rec.errs)
	}
}

func TestOpenTargets(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ target, err string }{
		{"does-not-exist", "no such file or directory, and not an image reference"},
		{"", "empty target"},
		{"git:", "nothing after"},
		{"oci:", "nothing after"},
	} {
		_, err := source.Open(ctx, tc.target, source.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Open(%q) = %v, want error containing %q", tc.target, err, tc.err)
		}
	}
	dir := t.TempDir()
	src, err := source.Open(ctx, "dir:"+dir, source.Options{})
	if err != nil || src.Target().Kind != scanners.KindDir {
		t.Errorf("dir: %v", err)
	}
}

func TestOpenScript(t *testing.T) {
	src := source.OpenScript("stdin", strings.NewReader("#!/bin/bash\necho hi\n"))
	rec := &recorder{}
	if err := src.Walk(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if src.Target().Kind != scanners.KindScript || rec.sizes["stdin"] != 20 {
		t.Errorf("target %+v sizes %v", src.Target(), rec.sizes)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
