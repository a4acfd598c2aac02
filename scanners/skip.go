package scanners

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// Skip is what a run leaves out (--skip-dirs, --skip-files): doublestar
// globs matched against a path relative to the target's root (an image's
// paths without their leading slash). A pattern without a slash also
// matches a name at any depth ("testdata", "*.bin"). A skipped directory is
// not listed (sources call SkipDir while they walk) and nothing under it is
// read; every skip is counted in the target's notes, never silent.
type Skip struct {
	Dirs, Files []string
}

// Validate reports the first pattern that is not a valid glob.
func (s Skip) Validate() error {
	for _, list := range [][]string{s.Dirs, s.Files} {
		for _, p := range list {
			if !doublestar.ValidatePattern(clean(p)) {
				return fmt.Errorf("bad glob %q", p)
			}
		}
	}
	return nil
}

// Empty reports whether nothing is skipped.
func (s Skip) Empty() bool { return len(s.Dirs) == 0 && len(s.Files) == 0 }

func clean(p string) string {
	p = strings.TrimPrefix(p, "./")
	return strings.Trim(p, "/")
}

func match(patterns []string, rel string) bool {
	base := path.Base(rel)
	for _, p := range patterns {
		p = clean(p)
		if ok, _ := doublestar.Match(p, rel); ok {
			return true
		}
		if !strings.Contains(p, "/") {
			if ok, _ := doublestar.Match(p, base); ok {
				return true
			}
		}
	}
	return false
}

// Dir reports whether the directory rel is skipped.
func (s Skip) Dir(rel string) bool {
	rel = clean(rel)
	return rel != "" && rel != "." && match(s.Dirs, rel)
}

// File reports whether the file rel is skipped: by --skip-files, or by
// --skip-dirs on a directory above it (for sources that do not list
// directories: images, git history).
func (s Skip) File(rel string) bool {
	rel = clean(rel)
	if rel == "" {
		return false
	}
	if match(s.Files, rel) {
		return true
	}
	for d := path.Dir(rel); d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if s.Dir(d) {
			return true
		}
	}
	return false
}

type skipKey struct{}

// skipped counts what one target's walk left out.
type skipped struct {
	Skip
	mu          sync.Mutex
	dirs, files int
	shown       []string // the first few in path order
}

const skipShown = 5

func (s *skipped) count(rel string, dir bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if dir {
		s.dirs++
		rel += "/"
	} else {
		s.files++
	}
	// Sources may walk in parallel: keep the first few by name, so that
	// the note is the same on every run.
	s.shown = append(s.shown, rel)
	slices.Sort(s.shown)
	s.shown = s.shown[:min(len(s.shown), skipShown)]
}

// SkipDir reports whether a source walking ctx's target should leave out
// the directory rel (relative to the target's root), and counts it when so.
// It is false when ctx carries no Skip.
func SkipDir(ctx context.Context, rel string) bool {
	s, _ := ctx.Value(skipKey{}).(*skipped)
	if s == nil || !s.Dir(rel) {
		return false
	}
	s.count(clean(rel), true)
	return true
}

// skipFile reports whether the artifact is left out, and counts it.
func (s *skipped) skipFile(a *Artifact) bool {
	if s == nil || (a.Kind != ArtifactFile && a.Kind != ArtifactPatch && a.Kind != "") || !s.File(a.Path) {
		return false
	}
	s.count(clean(a.Path), false)
	return true
}

// note says what was skipped, for the target's notes; n is how many paths.
func (s *skipped) note() (string, int) {
	if s == nil {
		return "", 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.dirs + s.files
	if n == 0 {
		return "", 0
	}
	var parts []string
	if s.dirs > 0 {
		parts = append(parts, plural(s.dirs, "directory", "directories"))
	}
	if s.files > 0 {
		parts = append(parts, plural(s.files, "file", "files"))
	}
	more := ""
	if n > len(s.shown) {
		more = fmt.Sprintf(" and %d more", n-len(s.shown))
	}
	return fmt.Sprintf("skipped by --skip-dirs/--skip-files: %s (%s%s)", strings.Join(parts, " and "), strings.Join(s.shown, ", "), more), n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// SkipOf returns the Skip that ctx's walk applies (empty when none), for a
// source that looks at a tree without walking it (counting it for
// progress): SkipOf(ctx).Dir never counts a skip.
func SkipOf(ctx context.Context) Skip {
	if s, _ := ctx.Value(skipKey{}).(*skipped); s != nil {
		return s.Skip
	}
	return Skip{}
}
