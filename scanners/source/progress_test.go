package source

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// countProgress sums what a walk reports.
type countProgress struct {
	mu                         sync.Mutex
	wantItems, wantBytes, done int64
	scanned                    int64
}

func (c *countProgress) Start(scanners.Target)  {}
func (c *countProgress) Finish(scanners.Target) {}
func (c *countProgress) Expect(items, bytes int64) {
	c.mu.Lock()
	c.wantItems += items
	c.wantBytes += bytes
	c.mu.Unlock()
}
func (c *countProgress) Done(items, _ int64) {
	c.mu.Lock()
	c.done += items
	c.mu.Unlock()
}
func (c *countProgress) Scanned(int64) {
	c.mu.Lock()
	c.scanned++
	c.mu.Unlock()
}

// anyCheck wants every file.
type anyCheck struct{}

func (anyCheck) Check() string                         { return "a" }
func (anyCheck) Rules() []scanners.Rule                { return nil }
func (anyCheck) Wants(*scanners.Artifact, []byte) bool { return true }
func (anyCheck) Scan(context.Context, *scanners.Artifact, scanners.Content) ([]scanners.Finding, error) {
	return nil, nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFSSkipDirNotWalked: a skipped directory is never listed (its broken
// symlink would otherwise be a note), it is named in the target's notes,
// and the progress count leaves it out.
func TestFSSkipDirNotWalked(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "abc")
	writeFile(t, filepath.Join(dir, "fixtures", "b.txt"), "def")
	if err := os.Symlink("nowhere", filepath.Join(dir, "fixtures", "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{true, false} {
		src, err := OpenFS(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		prog := &countProgress{}
		opts := []scanners.Option{scanners.WithProgress(prog)}
		if skip {
			opts = append(opts, scanners.WithSkip(scanners.Skip{Dirs: []string{"fixtures"}}))
		}
		res := scanners.NewDispatcher([]scanners.Scanner{anyCheck{}}, opts...).Run(context.Background(), src)
		src.(io.Closer).Close()
		notes := strings.Join(res.Targets[0].Notes, "\n")
		broken := strings.Contains(notes, "broken symlink")
		if broken == skip || strings.Contains(notes, "skipped by --skip-dirs") != skip {
			t.Errorf("skip=%v: notes %q", skip, notes)
		}
		want := int64(2)
		if skip {
			want = 1
		}
		// The count ahead is best effort: it stops when the walk itself is
		// over, so it may have counted fewer, never more (never the
		// skipped ones).
		if prog.wantItems > want || prog.scanned != want {
			t.Errorf("skip=%v: progress expected %d files, scanned %d; want at most %d expected and %d scanned", skip, prog.wantItems, prog.scanned, want, want)
		}
	}
}

func TestGitProgressCountsCommits(t *testing.T) {
	gitNeeded(t)
	r := gitMakeRepo(t)
	src, err := OpenGit(context.Background(), r.dir, GitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.(io.Closer).Close()
	prog := &countProgress{}
	scanners.NewDispatcher([]scanners.Scanner{anyCheck{}}, scanners.WithProgress(prog)).Run(context.Background(), src)
	if prog.wantItems != 4 || prog.done != 4 {
		t.Errorf("commits: %d done of %d expected, want 4 of 4", prog.done, prog.wantItems)
	}
}
