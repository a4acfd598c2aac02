// Package source turns targets into artifact streams: files and directories,
// git repositories and scripts read from standard input here, container
// images in the image subpackage; Open parses a target argument and picks
// the source. A source knows where each byte came from and nothing about
// checks.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/scanners/source/script"
)

// DefaultMaxFileSize is the largest file scanned unless --max-file-size says
// otherwise. It is large on purpose: model checkpoints of tens of gigabytes
// are read only in their pickle members and directory, and text checks bound
// their own reads.
const DefaultMaxFileSize int64 = 64 << 30

// fsSource walks a file or a directory tree.
type fsSource struct {
	name    string // the target as given
	root    string // absolute path of the directory, or of the file
	single  bool   // root is one file
	maxSize int64
	workers int
	image   image.Options // for images found in the tree (nested.go)

	// fsys is the target's root (the directory, or the file's directory)
	// opened with os.Root, handed to checks as Artifact.FS.
	rootDir *os.Root
	fsys    fs.FS

	// skip are files (absolute paths as listed) that the walk leaves to
	// an image's walk: the blobs of a layout it scanned (nested.go). Only
	// the listing goroutine uses it.
	skip map[string]bool
	// layoutRefs: the root is an oci: target's layout, whose image the
	// image source walks; every blob its index reaches is the image's.
	layoutRefs bool
	// archiveNote: name a docker archive's members scanned as plain files
	// in a note (a docker-archive: target, where the user asked for the
	// image).
	archiveNote bool
	// archiveOnly: the root is a docker-archive: target, whose image the
	// image source walks; only the archive's other members are read here.
	archiveOnly bool

	// only, when set, are the only files walked (slash paths relative to
	// the root; --since-commit), onlyDirs the directories above them.
	only, onlyDirs map[string]bool
	// vcs is the repository a scoped walk's file list came from.
	vcs *scanners.VCS

	mu     sync.Mutex
	broken []string // symlinks to nothing: no content, so not errors
	notes  []string
}

func (s *fsSource) addNote(n string) {
	s.mu.Lock()
	s.notes = append(s.notes, n)
	s.mu.Unlock()
}

func (s *fsSource) kind() scanners.TargetKind {
	if s.single {
		return scanners.KindFile
	}
	return scanners.KindDir
}

// OpenFS returns a source for a file or a directory. It never follows a
// symlink out of the root, skips .git internals and never reads special
// files.
func OpenFS(path string, o Options) (scanners.Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open target: %w", err)
	}
	s := &fsSource{name: path, root: abs, maxSize: o.MaxFileSize, workers: o.Workers, image: o.Image}
	if s.maxSize <= 0 {
		s.maxSize = DefaultMaxFileSize
	}
	if s.workers <= 0 {
		s.workers = min(runtime.GOMAXPROCS(0), 8)
	}
	switch {
	case fi.Mode().IsRegular():
		s.single = true
	case fi.IsDir():
	default:
		return nil, fmt.Errorf("open target %s: not a regular file or directory (%s)", path, fi.Mode().Type())
	}
	dir := abs
	if s.single {
		dir = filepath.Dir(abs)
	}
	if s.rootDir, err = os.OpenRoot(dir); err != nil {
		return nil, fmt.Errorf("open target %s: %w", path, err)
	}
	s.fsys = s.rootDir.FS()
	return s, nil
}

// Close releases the target's root. Checks may read through Artifact.FS
// until the run is over (signatures judge a target after its walk), so the
// pipeline closes sources last.
func (s *fsSource) Close() error { return s.rootDir.Close() }

// FS is the target's root, as checks get it in Artifact.FS.
func (s *fsSource) FS() fs.FS { return s.fsys }

func (s *fsSource) Target() scanners.Target {
	t := scanners.Target{Name: s.name, Kind: s.kind(), VCS: s.vcs}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Notes = append(t.Notes, s.notes...)
	if n := len(s.broken); n > 0 {
		shown := s.broken[:min(n, 5)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf(" and %d more", n-len(shown))
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%d broken symlink(s) skipped, pointing nowhere or in a loop: %s%s", n, strings.Join(shown, ", "), more))
	}
	return t
}

// fsJob is one file to scan.
type fsJob struct {
	abs  string // path to open
	rel  string // slash path inside the target
	info fs.FileInfo
}

func (s *fsSource) Walk(ctx context.Context, sink scanners.Sink) error {
	jobs := make(chan fsJob, 64)
	var wg sync.WaitGroup
	for range s.workers {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					continue // drain
				}
				s.scanFile(ctx, sink, j)
			}
		})
	}
	var err error
	if s.single {
		expectFile(ctx, s.root)
		fi, statErr := os.Lstat(s.root)
		if statErr != nil {
			err = statErr
		} else {
			jobs <- fsJob{abs: s.root, rel: filepath.Base(s.root), info: fi}
		}
	} else {
		stop := expectTree(ctx, s.root) // for progress only
		err = s.walkDir(ctx, sink, jobs)
		stop()
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// walkDir lists the tree in lexical order. Symlinks are resolved and kept
// only when they stay inside the root; a directory reached twice (a loop) is
// walked once.
func (s *fsSource) walkDir(ctx context.Context, sink scanners.Sink, jobs chan<- fsJob) error {
	seen := map[string]bool{}
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			sink.Error(scanners.Error{Target: s.name, Path: relOrDot(rel), Message: fmt.Sprintf("resolve directory: %v", err)})
			return nil
		}
		if seen[real] {
			return nil // a symlink loop or a second link to the same directory
		}
		seen[real] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			sink.Error(scanners.Error{Target: s.name, Path: relOrDot(rel), Message: fmt.Sprintf("read directory: %v", errMsg(err))})
			// ReadDir returns what it read before the error.
		}
		if isOCILayout(entries) || s.layoutRefs && rel == "" {
			// An image: walked layer by layer, not as blobs; the blobs
			// it scanned are its, everything else is walked here too
			// (nested.go).
			if s.skip == nil {
				s.skip = map[string]bool{}
			}
			for p := range s.layoutScanned(ctx, dir) {
				s.skip[p] = true
			}
			if !s.layoutRefs || rel != "" {
				s.walkImage(ctx, sink, image.SchemeOCI, dir, rel)
			}
		}
		for _, e := range entries {
			name := e.Name()
			abs := filepath.Join(dir, name)
			if s.skip[abs] {
				continue // an image's blob, scanned as the image
			}
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if e.IsDir() && name == ".git" {
				continue // git history is the git source's business
			}
			if s.only != nil && !s.only[r] && !s.onlyDirs[r] {
				continue // outside the scope (--since-commit)
			}
			t := e.Type()
			if t&fs.ModeSymlink != 0 {
				target, err := filepath.EvalSymlinks(abs)
				if err != nil {
					if _, serr := os.Stat(abs); errors.Is(serr, fs.ErrNotExist) || errors.Is(serr, syscall.ELOOP) {
						// Nothing to read: a note, not an error that fails the run.
						s.mu.Lock()
						s.broken = append(s.broken, r)
						s.mu.Unlock()
						continue
					}
					sink.Error(scanners.Error{Target: s.name, Path: r, Message: fmt.Sprintf("resolve symlink: %v", errMsg(err))})
					continue
				}
				if !within(s.rootReal(), target) {
					continue // never follow a link out of the root
				}
				fi, err := os.Stat(abs)
				if err != nil {
					sink.Error(scanners.Error{Target: s.name, Path: r, Message: errMsg(err)})
					continue
				}
				if fi.IsDir() {
					if scanners.SkipDir(ctx, r) {
						continue // --skip-dirs: not listed, counted in a note
					}
					if err := walk(abs, r); err != nil {
						return err
					}
					continue
				}
				if fi.Mode().IsRegular() {
					jobs <- fsJob{abs: target, rel: r, info: fi}
				}
				continue
			}
			if e.IsDir() {
				if scanners.SkipDir(ctx, r) {
					continue // --skip-dirs: not listed, counted in a note
				}
				if err := walk(abs, r); err != nil {
					return err
				}
				continue
			}
			if !t.IsRegular() {
				continue // FIFOs, sockets, devices: never read
			}
			fi, err := e.Info()
			if err != nil {
				sink.Error(scanners.Error{Target: s.name, Path: r, Message: errMsg(err)})
				continue
			}
			jobs <- fsJob{abs: abs, rel: r, info: fi}
		}
		return nil
	}
	return walk(s.root, "")
}

func (s *fsSource) rootReal() string {
	if r, err := filepath.EvalSymlinks(s.root); err == nil {
		return r
	}
	return s.root
}

func (s *fsSource) scanFile(ctx context.Context, sink scanners.Sink, j fsJob) {
	if j.info.Size() > s.maxSize {
		sink.Error(scanners.Error{Target: s.name, Path: j.rel, Message: fmt.Sprintf("not scanned: %d bytes is over --max-file-size (%d bytes)", j.info.Size(), s.maxSize)})
		return
	}
	// Opened without blocking and checked again on the open file: it may
	// have been swapped for a FIFO (whose open would wait for a writer
	// forever) or a device since it was listed.
	f, fi, err := openRegular(func(flag int) (*os.File, error) { return os.OpenFile(j.abs, flag, 0) })
	if err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: j.rel, Message: fmt.Sprintf("open: %s", errMsg(err))})
		return
	}
	if f == nil {
		return
	}
	defer f.Close()
	if s.archiveOnly {
		s.archiveRest(ctx, sink, f, j.abs, j.rel) // the image source walks the image
		return
	}
	if isDockerArchive(j.abs, fi.Size()) {
		// An image: walked layer by layer, not as an archive; its other
		// members as files (nested.go).
		s.walkImage(ctx, sink, image.SchemeDockerArchive, j.abs, j.rel)
		s.archiveRest(ctx, sink, f, j.abs, j.rel)
		return
	}
	a := &scanners.Artifact{
		Kind:       scanners.ArtifactFile,
		Target:     s.name,
		TargetKind: s.Target().Kind,
		Path:       j.rel,
		Size:       fi.Size(),
		Mode:       fi.Mode(),
		FS:         s.fsys,
	}
	if err := sink.Artifact(a, f); err != nil && ctx.Err() == nil {
		sink.Error(scanners.Error{Target: s.name, Path: j.rel, Message: err.Error()})
	}
}

// openRegular opens a file that should be a regular file: without
// following a final symlink and without blocking (a FIFO's open waits for
// a writer), then checks the open file. It returns a nil file, and no
// error, when it is not regular (a FIFO, a device, a socket swapped in);
// a regular file is put back in blocking mode.
func openRegular(open func(flag int) (*os.File, error)) (*os.File, fs.FileInfo, error) {
	f, err := open(os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, nil // a symlink swapped in
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, nil
	}
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
	}
	return f, fi, nil
}

// isEscape reports whether err is os.Root refusing a path that leads out
// of the root (through a symlinked directory).
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func relOrDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// errMsg drops the absolute path that *fs.PathError repeats, since the
// report already names the target and the relative path.
func errMsg(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// OpenScript reads one script (a batch script on standard input, say) into a
// source of kind "script". name is used as the target and path.
func OpenScript(name string, r io.Reader) scanners.Source { return script.Open(name, r) }
