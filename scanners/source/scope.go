package source

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Scope narrows a scan to what a change touched (docs/design/scopes.md).
// The zero Scope scans everything.
type Scope struct {
	// Since: for git: targets the commits Since..HEAD; for a directory in
	// a git work tree the files changed since that commit and the
	// untracked ones (--since-commit).
	Since string
	// Staged: for a directory in a work tree, its staged files as the
	// index holds them (--staged).
	Staged bool
	// At: the state at this commit, read from the object store: a
	// directory's files in that commit's tree, a git: target's tree and the
	// history that reaches it (the base scan of --new-only).
	At string
}

// Empty reports whether s scans everything.
func (s Scope) Empty() bool { return s == Scope{} }

// resolveCommit turns what the user named (flag is the flag, for the
// message) into a full commit id, or an error saying it does not exist.
// A name that starts with "-" is refused: it would be an option.
func resolveCommit(ctx context.Context, g *gitRunner, flag, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return "", fmt.Errorf("%s %q: not a commit name", flag, ref)
	}
	sha, err := g.output(ctx, "", "rev-parse", "--verify", "-q", "--end-of-options", ref+"^{commit}")
	if err != nil || sha == "" {
		return "", fmt.Errorf("%s %s: no such commit in the repository (fetch it first: a shallow CI checkout may lack the base; use fetch-depth: 0)", flag, ref)
	}
	return sha, nil
}

// setVCS records the repository's URL, the revision and the branch for
// the report (SARIF versionControlProvenance).
func (s *gitSource) setVCS(ctx context.Context, head string) {
	v := &scanners.VCS{Revision: head}
	if s.remote {
		v.RepositoryURI = gitRedact(s.ref)
	} else {
		v.RepositoryURI = repoURI(ctx, s.git, s.ref)
	}
	if b, err := s.git.output(ctx, "", "symbolic-ref", "-q", "--short", "HEAD"); err == nil && !s.remote {
		v.Branch = b
	}
	s.mu.Lock()
	s.vcs = v
	s.mu.Unlock()
}

// vcsScope sets the revision the scan read and its scope.
func (s *gitSource) vcsScope(rev, scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vcs == nil {
		s.vcs = &scanners.VCS{}
	}
	s.vcs.Revision, s.vcs.Scope = rev, scope
}

// repoURI is a local repository's origin (without a password) or, without
// one, a file: URL of the repository on disk.
func repoURI(ctx context.Context, g *gitRunner, local string) string {
	if u, err := g.output(ctx, "", "config", "--get", "remote.origin.url"); err == nil && u != "" {
		return gitRedact(u)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(local)}).String()
}

// openScoped opens a directory in a git work tree for a Scope: with Since,
// the file-system source restricted to the files changed since the commit
// and the untracked ones; with Staged or At, the blobs of the index or of
// the commit's tree under the directory, read through git's object store.
func openScoped(ctx context.Context, path string, o Options) (scanners.Source, error) {
	flag := scopeFlag(o.Scope)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open target: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("target %s: %s applies to git: targets and to directories in a git work tree, not to a file", path, flag)
	}
	work, _, ok := gitDiscover(abs)
	if !ok || work == "" {
		return nil, fmt.Errorf("target %s: %s needs a git work tree, and %s is in none", path, flag, path)
	}
	src, err := OpenGit(ctx, work, o.Git)
	if err != nil {
		return nil, err
	}
	g := src.(*gitSource)
	w := &workTree{g: g, name: path, dir: abs, scope: o.Scope}
	if err := w.prepare(ctx, o); err != nil {
		g.Close()
		return nil, fmt.Errorf("target %s: %w", path, err)
	}
	if w.files != nil {
		g.Close()
		return w.files, nil
	}
	return w, nil
}

func scopeFlag(sc Scope) string {
	switch {
	case sc.Staged:
		return "--staged"
	case sc.Since != "":
		return "--since-commit"
	}
	return "--new-only"
}

// workTree is a directory of a work tree read from git's object store:
// the index (--staged) or a commit's tree (the base of --new-only).
type workTree struct {
	g     *gitSource
	name  string // the target as given
	dir   string // absolute
	scope Scope
	rev   string // the commit read (At) or HEAD
	vcs   scanners.VCS
	notes []string
	// entries are the blobs to read, named relative to dir.
	entries []gitEntry
	// files, for Since, is the file-system source restricted to the
	// changed files; it is the source then.
	files *fsSource
}

// prepare resolves the scope's commit and lists what is to be read.
func (w *workTree) prepare(ctx context.Context, o Options) error {
	g := w.g.git
	head, _ := g.output(ctx, "", "rev-parse", "--verify", "-q", "HEAD^{commit}")
	w.vcs = scanners.VCS{RepositoryURI: repoURI(ctx, g, w.g.ref), Revision: head}
	if b, err := g.output(ctx, "", "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		w.vcs.Branch = b
	}
	switch {
	case w.scope.At != "":
		at, err := resolveCommit(ctx, g, "--new-only", w.scope.At)
		if err != nil {
			return err
		}
		w.rev, w.vcs.Revision, w.vcs.Scope = at, at, "new-only base "+at
		if w.entries, err = w.g.treeEntries(ctx, w.dir, at); err != nil {
			return err
		}
		w.notes = append(w.notes, fmt.Sprintf("the base of --new-only: the directory as commit %s (%s) holds it, read from git's object store", w.scope.At, at))
	case w.scope.Staged:
		w.vcs.Scope = "staged"
		changed, err := w.stagedPaths(ctx, head)
		if err != nil {
			return err
		}
		out, err := g.bytes(ctx, w.dir, "ls-files", "-s", "-z")
		if err != nil {
			return err
		}
		for rec := range bytes.SplitSeq(out, []byte{0}) {
			meta, p, ok := bytes.Cut(rec, []byte{'\t'})
			if !ok {
				continue
			}
			f := strings.Fields(string(meta)) // mode oid stage
			if len(f) != 3 || f[0] == "120000" || f[0] == "160000" || !changed[string(p)] {
				continue // symlinks, submodules, unchanged files
			}
			w.entries = append(w.entries, gitEntry{f[0], f[1], string(p), -1})
		}
		w.notes = append(w.notes, fmt.Sprintf("scope: --staged, the %d file(s) staged for the next commit, as the index holds them (not the working files)", len(w.entries)))
	case w.scope.Since != "":
		since, err := resolveCommit(ctx, g, "--since-commit", w.scope.Since)
		if err != nil {
			return err
		}
		w.vcs.Scope = "since-commit " + since
		changed, err := g.bytes(ctx, w.dir, "diff", "--name-only", "-z", "--relative", "--no-renames", "--no-ext-diff", "--no-textconv", "--diff-filter=d", "--end-of-options", since, "--")
		if err != nil {
			return err
		}
		untracked, err := g.bytes(ctx, w.dir, "ls-files", "-z", "--others", "--exclude-standard")
		if err != nil {
			return err
		}
		only := map[string]bool{}
		for _, list := range [][]byte{changed, untracked} {
			for p := range bytes.SplitSeq(list, []byte{0}) {
				if len(p) > 0 {
					only[string(p)] = true
				}
			}
		}
		src, err := OpenFS(w.dir, o)
		if err != nil {
			return err
		}
		f := src.(*fsSource)
		f.name = w.name
		f.setOnly(only)
		v := w.vcs
		f.vcs = &v
		f.addNote(fmt.Sprintf("scope: --since-commit %s (%s): the %d file(s) changed since that commit or untracked; deleted files are not findings, the rest of the directory was not scanned", w.scope.Since, since, len(only)))
		w.files = f
	}
	return nil
}

// stagedPaths are the files under the directory that the index changes
// against HEAD (every file of the index before the first commit), named
// relative to it.
func (w *workTree) stagedPaths(ctx context.Context, head string) (map[string]bool, error) {
	g := w.g.git
	var out []byte
	var err error
	if head == "" {
		out, err = g.bytes(ctx, w.dir, "ls-files", "-z", "--cached")
	} else {
		out, err = g.bytes(ctx, w.dir, "diff", "--cached", "--name-only", "-z", "--relative", "--no-renames", "--no-ext-diff", "--no-textconv", "--diff-filter=d", "HEAD", "--")
	}
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for p := range bytes.SplitSeq(out, []byte{0}) {
		if len(p) > 0 {
			m[string(p)] = true
		}
	}
	return m, nil
}

func (w *workTree) Target() scanners.Target {
	v := w.vcs
	return scanners.Target{Name: w.name, Kind: scanners.KindDir, Notes: append([]string(nil), w.notes...), VCS: &v}
}

func (w *workTree) Walk(ctx context.Context, sink scanners.Sink) error {
	return w.g.readBlobs(ctx, sink, nil, w.entries, w.name, scanners.KindDir, nil)
}

// Close releases git's empty home.
func (w *workTree) Close() error { return w.g.Close() }

// setOnly restricts the walk to the files of only (slash paths relative
// to the root) and the directories that lead to them.
func (s *fsSource) setOnly(only map[string]bool) {
	s.only, s.onlyDirs = only, map[string]bool{}
	for p := range only {
		for d := p; ; {
			i := strings.LastIndexByte(d, '/')
			if i < 0 {
				break
			}
			d = d[:i]
			s.onlyDirs[d] = true
		}
	}
}

// FS is nil for a work tree read from the object store: its files are not
// the ones on disk.
func (w *workTree) FS() fs.FS { return nil }
