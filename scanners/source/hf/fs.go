package hf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mlwarden/mlwarden/scanners/source/ranged"
)

// repoFS is a repository at one commit as a file system, handed to checks
// as Artifact.FS: they read a file's neighbours through it (model.sig, a
// manifest's files, a lock file), each read a ranged one. It knows the
// sha256 of every Git LFS file from the tree (FileDigest), so a manifest
// or signature that names the weights is checked without downloading them.
type repoFS struct {
	ctx    context.Context
	src    *hubSource
	commit string
	st     *stats

	files map[string]*File
	order []string            // file paths, sorted
	dirs  map[string][]string // directory → its entries' names, sorted

	mu         sync.Mutex
	whole      map[string][]byte // small files already fetched whole
	wholeBytes int64
}

// maxWhole bounds the small files kept for reads through the FS.
const (
	maxWholeFile  = 1 << 20
	maxWholeBytes = 64 << 20
)

func newRepoFS(ctx context.Context, s *hubSource, commit string, st *stats) *repoFS {
	return &repoFS{ctx: ctx, src: s, commit: commit, st: st, files: map[string]*File{}, dirs: map[string][]string{".": nil}, whole: map[string][]byte{}}
}

// add lists f and its directories; paths are valid (fs.ValidPath). The
// listing is collected as it comes and sorted once (index): a tree listed
// in reverse order is not an insertion at the front per file. More
// directories than maxDirs is an error.
func (r *repoFS) add(f File, maxDirs int) error {
	r.files[f.Path] = &f
	r.order = append(r.order, f.Path)
	for p := f.Path; p != "."; {
		dir, base := path.Dir(p), path.Base(p)
		names, known := r.dirs[dir]
		r.dirs[dir] = append(names, base)
		if known {
			break
		}
		if len(r.dirs) > maxDirs {
			return fmt.Errorf("the tree's files are in more than %d directories (the source's bound)", maxDirs)
		}
		p = dir
	}
	return nil
}

// index sorts what add collected: the file paths, and each directory's
// names (without the repeats a name that is both a file and a directory
// leaves).
func (r *repoFS) index(ctx context.Context) error {
	slices.Sort(r.order)
	i := 0
	for d, names := range r.dirs {
		if i++; i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		slices.Sort(names)
		r.dirs[d] = slices.Compact(names)
	}
	return nil
}

// reader returns a ranged reader of f at the commit.
func (r *repoFS) reader(f *File) *ranged.Reader { return r.hashedReader(f, nil) }

// hashedReader is reader, with every fetch it makes also handed to w
// (when not nil), which hashes the file when the fetches cover it in order.
func (r *repoFS) hashedReader(f *File, w *wholeHash) *ranged.Reader {
	g := newFileGetter(r.src.c, r.src.ref, r.commit, *f)
	fetch := g.fetch
	if w != nil {
		fetch = func(ctx context.Context, off, n int64) ([]byte, error) {
			data, err := g.fetch(ctx, off, n)
			if err == nil {
				w.fetched(off, n, data)
			}
			return data, err
		}
	}
	return ranged.New(r.ctx, f.Size, fetch, ranged.Options{
		Path:         f.Path,
		Budget:       r.st.budget,
		ZipReadAhead: true,
		Verify: func(data []byte) error {
			if err := g.verify(data); err != nil {
				return err
			}
			r.keep(f.Path, data)
			return nil
		},
	})
}

// keep remembers a small file fetched whole, for a later read through the FS.
func (r *repoFS) keep(p string, data []byte) {
	if int64(len(data)) > maxWholeFile {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.whole[p]; ok || r.wholeBytes+int64(len(data)) > maxWholeBytes {
		return
	}
	r.whole[p] = data
	r.wholeBytes += int64(len(data))
}

// Open opens a file (a ranged reader) or a directory of the repository.
func (r *repoFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if f := r.files[name]; f != nil {
		r.mu.Lock()
		data, ok := r.whole[name]
		r.mu.Unlock()
		if ok {
			return &memFile{Reader: bytes.NewReader(data), info: fileInfo{name: path.Base(name), size: f.Size}}, nil
		}
		return &remoteFile{Reader: r.reader(f), fs: r, name: name, info: fileInfo{name: path.Base(name), size: f.Size}}, nil
	}
	if names, ok := r.dirs[name]; ok {
		return &dirFile{fs: r, name: name, names: names}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// Stat describes a file or directory without reading it.
func (r *repoFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if f := r.files[name]; f != nil {
		return fileInfo{name: path.Base(name), size: f.Size}, nil
	}
	if _, ok := r.dirs[name]; ok {
		return fileInfo{name: path.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// ReadDir lists a directory, sorted by name.
func (r *repoFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	names, ok := r.dirs[name]
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		fi, err := r.Stat(path.Join(name, n))
		if err != nil {
			return nil, err
		}
		out = append(out, fs.FileInfoToDirEntry(fi))
	}
	return out, nil
}

// FileDigest returns the sha256 the tree lists for a Git LFS file (the
// checksums package's KnownDigests): the Hub computed it from the bytes
// when they were uploaded, and serves those bytes under it.
func (r *repoFS) FileDigest(name, algo string) (string, int64, bool) {
	f := r.files[name]
	if f == nil || algo != "sha256" || f.LFS == nil || len(f.LFS.OID) != 64 || !isHex(strings.ToLower(f.LFS.OID)) {
		return "", 0, false
	}
	r.st.digestFromTree(name)
	return strings.ToLower(f.LFS.OID), f.Size, true
}

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (fi fileInfo) Name() string { return fi.name }
func (fi fileInfo) Size() int64  { return fi.size }
func (fi fileInfo) Mode() fs.FileMode {
	if fi.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return fi.dir }
func (fi fileInfo) Sys() any           { return nil }

// remoteFile is an open file of the repository: Read, ReadAt and Seek
// over ranged requests. Close records what it downloaded.
type remoteFile struct {
	*ranged.Reader
	fs   *repoFS
	name string
	info fileInfo
	pos  int64
}

func (f *remoteFile) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *remoteFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *remoteFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += f.pos
	case io.SeekEnd:
		off += f.info.size
	default:
		return 0, fs.ErrInvalid
	}
	if off < 0 {
		return 0, fs.ErrInvalid
	}
	f.pos = off
	return off, nil
}

func (f *remoteFile) Close() error {
	f.fs.st.fetchedToVerify(f.name, f.Fetched())
	return nil
}

// memFile is a small file already fetched.
type memFile struct {
	*bytes.Reader
	info fileInfo
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

// dirFile is an open directory.
type dirFile struct {
	fs    *repoFS
	name  string
	names []string
	next  int
}

func (d *dirFile) Stat() (fs.FileInfo, error) {
	return fileInfo{name: path.Base(d.name), dir: true}, nil
}
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: fs.ErrInvalid}
}
func (d *dirFile) Close() error { return nil }

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	all, err := d.fs.ReadDir(d.name)
	if err != nil {
		return nil, err
	}
	rest := all[d.next:]
	if n <= 0 {
		d.next = len(all)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.next += len(rest)
	return rest, nil
}
