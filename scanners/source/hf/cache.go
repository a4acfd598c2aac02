package hf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
)

// A local Hub cache (HF_HUB_CACHE, default ~/.cache/huggingface/hub) holds,
// per repository, a folder models--ORG--NAME (datasets--, spaces--) with
// blobs/<etag> (the content), refs/<branch> (a commit id) and
// snapshots/<commit>/<path> (relative symlinks into blobs/, or copies
// where symlinks are off). A snapshot is scanned as the repository at that
// commit: paths are the repository's, the cache's links are followed
// inside the repository's folder only.
//
// A repository's folder or a cache root is a directory the user asked to
// scan, and untrusted: the snapshots are one view of it, not all of it. So
// after the snapshots, every other file there is scanned as a plain file,
// named by its path from the target (blobs/<etag> no snapshot links to,
// .locks/…, refs/…, .no_exist/…, anything put beside them); a file a
// snapshot already read (its blob, by device and inode) is not read again
// (issue 37). A note names those that are not the cache's own plumbing
// (empty lock and .no_exist files, refs holding a commit id). A snapshot
// target is that snapshot's directory: nothing beside it is walked.

// repoFolder matches a repository's folder in the cache.
var repoFolder = lazyregexp.New(`^(model|dataset|space)s--(.+)$`)

// cacheExtras are what a cache root holds besides repository folders.
var cacheExtras = map[string]bool{".locks": true, "CACHEDIR.TAG": true, "version.txt": true, ".xet": true}

// CacheOptions configures the cache source.
type CacheOptions struct {
	// MaxFileSize is the largest file scanned (a larger one is an error).
	MaxFileSize int64
	// Workers bounds how many files are read at once (default: the CPUs,
	// at most 8).
	Workers int
}

// snapshot is one snapshot to walk.
type snapshot struct {
	ref    Ref    // the repository; Revision is the commit when it is one
	commit string // the folder's name: a commit id
	dir    string // slash path relative to the source's root
	refs   []string
}

// cacheSource walks snapshots of a Hub cache.
type cacheSource struct {
	name    string
	root    *os.Root
	fsys    *subFS // the root from base: Artifact.FS
	base    string // where artifact paths start, relative to the root ("." for the root)
	walk    []string
	snaps   []snapshot
	maxSize int64
	workers int
	notes   []string

	// rest: walk the root's other files after the snapshots (a
	// repository's folder or a cache root). read holds the files listed
	// so far, by device and inode; only the listing goroutine uses it.
	rest bool
	read map[[2]uint64]bool

	mu    sync.Mutex
	other []string // files outside the snapshots that are not plumbing
}

// IsCache reports whether p is inside a Hub cache in a way OpenCache
// reads: a snapshot (or a file or folder in one), a repository's folder,
// or a cache root whose entries are all repository folders.
func IsCache(p string) bool {
	_, _, _, ok := locate(p)
	return ok
}

// locate finds the source's root for p, the base of artifact paths and
// the snapshots to walk (each a directory relative to the root, or a path
// inside one).
func locate(p string) (root, base string, walk []string, ok bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", "", nil, false
	}
	parts := strings.Split(filepath.ToSlash(abs), "/")
	for i := len(parts) - 3; i >= 1; i-- {
		if repoFolder.MatchString(parts[i]) && parts[i+1] == "snapshots" && parts[i+2] != "" {
			root = filepath.FromSlash(strings.Join(parts[:i+1], "/"))
			if root == "" {
				root = "/"
			}
			base = "snapshots/" + parts[i+2]
			walk = []string{path.Join(parts[i+1:]...)}
			return root, base, walk, true
		}
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", "", nil, false
	}
	if filepath.Base(abs) == "snapshots" && repoFolder.MatchString(filepath.Base(filepath.Dir(abs))) {
		abs = filepath.Dir(abs) // a repository's snapshots: the repository
	}
	if repoFolder.MatchString(filepath.Base(abs)) {
		snaps := snapshotDirs(abs, "")
		return abs, ".", snaps, len(snaps) > 0
	}
	d, err := os.Open(abs)
	if err != nil {
		return "", "", nil, false
	}
	defer d.Close()
	// A cache root holds repository folders only; read no further than the
	// first entry that is something else (any directory is asked this).
	for {
		entries, err := d.ReadDir(128)
		for _, e := range entries {
			switch {
			case cacheExtras[e.Name()]:
			case e.IsDir() && repoFolder.MatchString(e.Name()):
				walk = append(walk, snapshotDirs(filepath.Join(abs, e.Name()), e.Name())...)
			default:
				return "", "", nil, false // something else: a plain directory
			}
		}
		if err != nil || len(entries) == 0 {
			break
		}
	}
	slices.Sort(walk)
	return abs, ".", walk, len(walk) > 0
}

// snapshotDirs lists repo/snapshots/* (prefix is repo's path in the root).
func snapshotDirs(repo, prefix string) []string {
	entries, err := os.ReadDir(filepath.Join(repo, "snapshots"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, path.Join(prefix, "snapshots", e.Name()))
		}
	}
	return out
}

// OpenCache opens a Hub cache path (IsCache): a snapshot is scanned as the
// repository at its commit (the target's digest), with the repository's
// paths; a repository's folder or a cache root as every snapshot in it,
// with paths relative to it (snapshots/<commit>/…).
func OpenCache(p string, o CacheOptions) (scanners.Source, error) {
	rootDir, base, walk, ok := locate(p)
	if !ok {
		return nil, fmt.Errorf("%s: not a Hugging Face cache snapshot, repository folder or cache root", p)
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, fmt.Errorf("open target %s: %w", p, err)
	}
	s := &cacheSource{name: p, root: root, base: base, walk: walk, maxSize: o.MaxFileSize, workers: o.Workers}
	if s.workers <= 0 {
		s.workers = min(runtime.GOMAXPROCS(0), 8)
	}
	s.fsys = &subFS{root: root, base: base}
	s.rest = base == "."
	s.findSnapshots(filepath.Base(rootDir))
	return s, nil
}

// findSnapshots names the repository and commit of every walked snapshot,
// and the refs that point at it.
func (s *cacheSource) findSnapshots(rootName string) {
	seen := map[string]bool{}
	for _, w := range s.walk {
		parts := strings.Split(w, "/")
		// [repoFolder/]snapshots/<commit>[/...]
		i := slices.Index(parts, "snapshots")
		if i < 0 || i+1 >= len(parts) {
			continue
		}
		folder, repoDir := rootName, "."
		if i == 1 {
			folder, repoDir = parts[0], parts[0]
		}
		dir := path.Join(parts[:i+2]...)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		m := repoFolder.FindStringSubmatch(folder)
		if m == nil {
			continue
		}
		sn := snapshot{ref: Ref{Type: m[1], ID: strings.ReplaceAll(m[2], "--", "/")}, commit: parts[i+1], dir: dir}
		if IsCommit(sn.commit) {
			sn.ref.Revision = sn.commit
		}
		sn.refs = s.refsTo(repoDir, sn.commit)
		s.snaps = append(s.snaps, sn)
	}
	for i, sn := range s.snaps {
		if i == 5 {
			s.notes = append(s.notes, fmt.Sprintf("and %d more snapshots", len(s.snaps)-5))
			break
		}
		where := "no ref points at it (an older commit)"
		if len(sn.refs) > 0 {
			where = "refs " + strings.Join(sn.refs, ", ") + " point at it"
		}
		s.notes = append(s.notes, fmt.Sprintf("Hugging Face cache: %s %s at commit %s (%s); only the files downloaded into the cache are there", sn.ref.Type, sn.ref.ID, sn.commit, where))
	}
}

// refsTo lists the refs of the repository folder repoDir (relative to the
// root) that hold commit.
func (s *cacheSource) refsTo(repoDir, commit string) []string {
	var out []string
	rfs := s.root.FS()
	dir := path.Join(repoDir, "refs")
	_ = fs.WalkDir(rfs, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		f, err := s.root.Open(filepath.FromSlash(p))
		if err != nil {
			return nil
		}
		defer f.Close()
		buf := make([]byte, 128)
		n, _ := io.ReadFull(f, buf)
		if strings.TrimSpace(string(buf[:n])) == commit {
			out = append(out, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	return out
}

// Close releases the root. Checks read through Artifact.FS until the run
// is over, so the pipeline closes sources last.
func (s *cacheSource) Close() error { return s.root.Close() }

func (s *cacheSource) Target() scanners.Target {
	t := scanners.Target{Name: s.name, Kind: scanners.KindDir, Notes: slices.Clone(s.notes)}
	s.mu.Lock()
	if n := len(s.other); n > 0 {
		other := slices.Sorted(slices.Values(s.other))
		shown, more := other[:min(n, 5)], ""
		if n > len(shown) {
			more = fmt.Sprintf(" and %d more", n-len(shown))
		}
		t.Notes = append(t.Notes, fmt.Sprintf("Hugging Face cache: %d file(s) outside the snapshots (blobs no snapshot links to, files beside the cache's own) were scanned as plain files: %s%s", n, strings.Join(shown, ", "), more))
	}
	s.mu.Unlock()
	if len(s.snaps) == 1 && IsCommit(s.snaps[0].commit) {
		t.Digest = s.snaps[0].commit
	}
	return t
}

type cacheJob struct {
	rel   string // relative to the root
	path  string // the artifact's path
	other bool   // outside the snapshots
}

func (s *cacheSource) Walk(ctx context.Context, sink scanners.Sink) error {
	jobs := make(chan cacheJob, 64)
	var wg sync.WaitGroup
	for range s.workers {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() == nil {
					s.scanFile(ctx, sink, j)
				}
			}
		})
	}
	seen := map[[2]uint64]bool{}
	s.read = map[[2]uint64]bool{}
	var err error
	for _, w := range s.walk {
		if err = s.walkDir(ctx, sink, jobs, w, seen, 0, false); err != nil {
			break
		}
	}
	if err == nil && s.rest {
		// Everything else, the snapshots' directories (seen) and the
		// blobs they link (read) aside.
		err = s.walkDir(ctx, sink, jobs, ".", seen, 0, true)
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// artPath is an artifact's path: rel (relative to the root) from base.
func (s *cacheSource) artPath(rel string) string {
	if s.base == "." {
		return rel
	}
	return strings.TrimPrefix(strings.TrimPrefix(rel, s.base), "/")
}

// maxCacheDepth bounds directory nesting inside a snapshot.
const maxCacheDepth = 64

// walkDir lists rel (a directory or a file inside the root) in lexical
// order. The cache's symlinks are followed through the root, so one that
// leads out of the repository's folder (or the cache root) is refused.
// other: the walk outside the snapshots, which skips files already read.
func (s *cacheSource) walkDir(ctx context.Context, sink scanners.Sink, jobs chan<- cacheJob, rel string, seen map[[2]uint64]bool, depth int, other bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := s.root.Stat(filepath.FromSlash(rel))
	if err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: s.artPath(rel), Message: cacheErr(err)})
		return nil
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			k := [2]uint64{uint64(st.Dev), st.Ino}
			if other && s.read[k] {
				return nil // a blob a snapshot links to: read as the snapshot's file
			}
			s.read[k] = true
		}
		jobs <- cacheJob{rel: rel, path: s.artPath(rel), other: other}
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k := [2]uint64{uint64(st.Dev), st.Ino}
		if seen[k] {
			return nil
		}
		seen[k] = true
	}
	if depth > maxCacheDepth {
		sink.Error(scanners.Error{Target: s.name, Path: s.artPath(rel), Message: fmt.Sprintf("directories nested deeper than %d: not scanned", maxCacheDepth)})
		return nil
	}
	entries, err := fs.ReadDir(s.root.FS(), rel)
	if err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: s.artPath(rel), Message: cacheErr(err)})
	}
	for _, e := range entries {
		if err := s.walkDir(ctx, sink, jobs, path.Join(rel, e.Name()), seen, depth+1, other); err != nil {
			return err
		}
	}
	return nil
}

// plumbing reports a file outside the snapshots that the Hub's client
// writes: an empty lock or .no_exist marker, a ref holding a commit id,
// a small version.txt.
// (It is scanned all the same; it is only not named in the note.)
func plumbing(rel string, f *os.File, fi fs.FileInfo) bool {
	if fi.Size() == 0 || cacheExtras[rel] && fi.Size() <= 1024 {
		return true // and a cache root's small version.txt, CACHEDIR.TAG
	}
	parts := strings.Split(rel, "/")
	if !slices.Contains(parts, "refs") || fi.Size() > 64 {
		return false
	}
	buf := make([]byte, 64)
	n, _ := f.ReadAt(buf, 0)
	return IsCommit(strings.TrimSpace(string(buf[:n])))
}

// cacheErr says what a failed stat or open means here.
func cacheErr(err error) string {
	msg := errMsg(err)
	if strings.Contains(msg, "escapes") {
		return "a symlink leads out of the cache's repository folder: not followed (the cache's own links stay inside it; this one was made by something else)"
	}
	return msg
}

func errMsg(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

func (s *cacheSource) scanFile(ctx context.Context, sink scanners.Sink, j cacheJob) {
	f, err := s.root.Open(filepath.FromSlash(j.rel))
	if err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: j.path, Message: "open: " + cacheErr(err)})
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return // swapped for something that is not a file since it was listed
	}
	if s.maxSize > 0 && fi.Size() > s.maxSize {
		sink.Error(scanners.Error{Target: s.name, Path: j.path, Message: fmt.Sprintf("not scanned: %d bytes is over --max-file-size (%d bytes)", fi.Size(), s.maxSize)})
		return
	}
	if j.other && !plumbing(j.rel, f, fi) {
		s.mu.Lock()
		s.other = append(s.other, j.path)
		s.mu.Unlock()
	}
	a := &scanners.Artifact{
		Kind:       scanners.ArtifactFile,
		Target:     s.name,
		TargetKind: scanners.KindDir,
		Path:       j.path,
		Size:       fi.Size(),
		Mode:       fi.Mode(),
		FS:         s.fsys,
	}
	if err := sink.Artifact(a, f); err != nil && ctx.Err() == nil {
		sink.Error(scanners.Error{Target: s.name, Path: j.path, Message: err.Error()})
	}
}

// subFS is the root from base, as checks get it in Artifact.FS. Names are
// opened through the os.Root, which follows the cache's symlinks and
// refuses any that leads out of it. It does not offer fs.ReadLinkFS: the
// links are the cache's plumbing, resolved by the root, not part of the
// repository.
type subFS struct {
	root *os.Root
	base string
}

func (f *subFS) name(op, n string) (string, error) {
	if !fs.ValidPath(n) {
		return "", &fs.PathError{Op: op, Path: n, Err: fs.ErrInvalid}
	}
	return filepath.FromSlash(path.Join(f.base, n)), nil
}

func (f *subFS) Open(n string) (fs.File, error) {
	p, err := f.name("open", n)
	if err != nil {
		return nil, err
	}
	file, err := f.root.Open(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: n, Err: unwrapPath(err)}
	}
	return file, nil
}

func (f *subFS) Stat(n string) (fs.FileInfo, error) {
	p, err := f.name("stat", n)
	if err != nil {
		return nil, err
	}
	fi, err := f.root.Stat(p)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: n, Err: unwrapPath(err)}
	}
	return fi, nil
}

// ReadDir lists a directory, each symlink as what it leads to (the
// cache's links are how files are stored, not files of the repository).
func (f *subFS) ReadDir(n string) ([]fs.DirEntry, error) {
	p, err := f.name("readdir", n)
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(f.root.FS(), filepath.ToSlash(p))
	for i, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if fi, serr := f.root.Stat(filepath.Join(p, e.Name())); serr == nil {
			entries[i] = fs.FileInfoToDirEntry(fi)
		}
	}
	return entries, err
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
