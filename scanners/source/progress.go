package source

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/gitleaks/go-gitdiff/gitdiff"

	"github.com/mlwarden/mlwarden/scanners"
)

// expectTree tells the run's progress how many files and bytes the tree
// under root holds, from names and sizes only (no content is read), while
// the scan walks it, so that a bar can show an ETA. Directories the run
// skips are not counted; symlinks are not followed. It does nothing when
// no progress is drawn. The returned stop ends the count and waits for it.
func expectTree(ctx context.Context, root string) (stop func()) {
	if !scanners.HasProgress(ctx) {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	p, skip := scanners.ProgressOf(ctx), scanners.SkipOf(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
			if err != nil || ctx.Err() != nil {
				return ctx.Err() // unreadable parts: the walk reports them
			}
			rel, _ := filepath.Rel(root, abs)
			rel = filepath.ToSlash(rel)
			switch {
			case d.IsDir() && (d.Name() == ".git" || skip.Dir(rel)):
				return filepath.SkipDir
			case d.Type().IsRegular() && !skip.File(rel):
				if fi, err := d.Info(); err == nil {
					p.Expect(1, fi.Size())
				}
			}
			return nil
		})
	})
	return func() { cancel(); wg.Wait() }
}

// expectFile tells the run's progress about a single-file target.
func expectFile(ctx context.Context, path string) {
	if fi, err := os.Stat(path); err == nil && scanners.HasProgress(ctx) {
		scanners.ProgressOf(ctx).Expect(1, fi.Size())
	}
}

// gitCommits counts the commits of history for the run's progress as the
// log is read: how many there are (git rev-list --all --count, asked only
// when progress is drawn), and one done each time the log reaches the next
// commit.
type gitCommits struct {
	p    scanners.Progress
	last string
}

func newGitCommits(ctx context.Context, g *gitRunner) *gitCommits {
	c := &gitCommits{p: scanners.ProgressOf(ctx)}
	if scanners.HasProgress(ctx) {
		if out, err := g.output(ctx, "", "rev-list", "--all", "--count"); err == nil {
			if n, err := strconv.ParseInt(out, 10, 64); err == nil {
				c.p.Expect(n, 0)
			}
		}
	}
	return c
}

func (c *gitCommits) file(f *gitdiff.File) {
	if f.PatchHeader == nil || f.PatchHeader.SHA == c.last {
		return
	}
	c.last = f.PatchHeader.SHA
	c.p.Done(1, 0)
}
