package checksums

import (
	"context"
	"crypto/sha1" //nolint:gosec // sha1 manifests exist; verifying one is not signing
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/sync/errgroup"
)

// Status is the outcome of checking one entry.
type Status string

// Statuses, as `sha256sum -c` names them, plus REJECTED for names that
// would leave the root.
const (
	OK       Status = "OK"
	Mismatch Status = "FAILED"
	Missing  Status = "MISSING"
	Rejected Status = "REJECTED"
	Unread   Status = "ERROR"
)

// Result is one checked entry.
type Result struct {
	Entry
	// Path is the entry's path inside the root ("" when rejected).
	Path   string
	Status Status
	// Got is the digest found (hex), when the file was read.
	Got string
	// Size is the file's size, when it was read.
	Size int64
	// Reason says why a non-OK entry failed.
	Reason string
}

// NewHash returns a hash for an algorithm name.
func NewHash(algo string) (hash.Hash, error) {
	switch algo {
	case "sha256":
		return sha256.New(), nil
	case "sha512":
		return sha512.New(), nil
	case "sha384":
		return sha512.New384(), nil
	case "sha1":
		return sha1.New(), nil //nolint:gosec
	case "blake2", "blake2b":
		return blake2b.New512(nil)
	}
	return nil, fmt.Errorf("unsupported hash algorithm %q", algo)
}

// SafeJoin resolves name (as written in a manifest in directory dir, both
// slash-separated and relative to the root) to a clean root-relative path.
// It refuses absolute names, drive letters, backslashes, NUL bytes and any
// ".." element: a manifest may only name files beside or below it.
func SafeJoin(dir, name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("empty name")
	case strings.HasPrefix(name, "/"):
		return "", errors.New("absolute path")
	case strings.ContainsAny(name, "\\\x00"):
		return "", errors.New("backslash or NUL in name")
	case len(name) >= 2 && name[1] == ':':
		return "", errors.New("drive letter in name")
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return "", errors.New(`".." in name leaves the manifest's directory`)
		}
	}
	p := path.Join(dir, name)
	if p == "." || !fs.ValidPath(p) {
		return "", fmt.Errorf("invalid path %q", p)
	}
	return p, nil
}

// Hasher hashes files of one file system, each file and algorithm at most
// once, so a file named by several manifests (SHA256SUMS and model.sig) is
// read once. It is safe for concurrent use.
//
// Names are slash-separated and relative to the file system's root. A name
// that leads out of it through a symlink is refused with an error wrapping
// ErrEscapes and never read, whether the file system refuses it itself (an
// os.Root's FS does) or would follow it (os.DirFS would).
type Hasher struct {
	fsys fs.FS
	read atomic.Int64  // bytes read from files by the Hasher itself
	sem  chan struct{} // bounds Prefetch
	mu   sync.Mutex
	memo map[string]*memoEntry
}

type memoEntry struct {
	once   sync.Once
	digest string
	size   int64
	err    error
}

// KnownDigests is implemented by a file system that knows the digests of
// some of its files without reading them: a Hub repository's tree lists
// the sha256 of each Git LFS file, which the Hub computed from the bytes
// it serves. FileDigest returns the hex digest of the file name (slash
// path, as for Open) by algorithm algo and its size, or ok false. The
// Hasher takes such a digest instead of reading the file; the file system
// says where it came from (a Hub source notes it on the target).
type KnownDigests interface {
	FileDigest(name, algo string) (hex string, size int64, ok bool)
}

// NewHasher returns a Hasher reading only through fsys, typically an
// os.Root's FS. Files that are io.ReaderAt (an os.Root's *os.File) are read
// in place where only part of them is needed; others are streamed.
func NewHasher(fsys fs.FS) *Hasher {
	return &Hasher{fsys: fsys, memo: map[string]*memoEntry{}, sem: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// FS returns the file system the Hasher reads through. Reading it directly
// does not refuse symlinks out of it unless the file system does; Open and
// Stat do.
func (h *Hasher) FS() fs.FS { return h.fsys }

// ErrEscapes is wrapped by the errors of names that lead out of the file
// system's root through a symlink.
var ErrEscapes = errors.New("path escapes from the root")

// maxLinks bounds the symlinks followed to resolve one name, as Linux does.
const maxLinks = 40

// Open opens the file p, refusing with an error wrapping ErrEscapes a name
// that a symlink leads out of the root. It never reads the file.
func (h *Hasher) Open(p string) (fs.File, error) {
	f, err := h.fsys.Open(p)
	if err := h.confined("open", p, err); err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	return f, nil
}

// Stat returns the FileInfo of the file p, following symlinks only inside
// the root, as Open does.
func (h *Hasher) Stat(p string) (fs.FileInfo, error) {
	fi, err := fs.Stat(h.fsys, p)
	if err := h.confined("stat", p, err); err != nil {
		return nil, err
	}
	return fi, nil
}

// confined checks the outcome err of opening p. The file system's own
// refusal (an os.Root's "path escapes from parent") is returned as it is.
// Otherwise a symlink on the way out of the root is an error wrapping
// ErrEscapes, whether the file system followed it (os.DirFS) or found
// nothing there; a name that is simply missing keeps its fs.ErrNotExist.
func (h *Hasher) confined(op, p string, err error) error {
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	cerr := confine(h.fsys, p)
	switch {
	case cerr == nil:
		return err
	case err != nil && !errors.Is(cerr, ErrEscapes):
		return err
	}
	return &fs.PathError{Op: op, Path: p, Err: cerr}
}

// confine resolves the symlinks on the way to name, one element at a time,
// and returns ErrEscapes when one leads out of fsys's root: an absolute
// target, or ".." above the root. A file system that cannot read links
// (no fs.ReadLinkFS) is taken to have none of its own.
func confine(fsys fs.FS, name string) error {
	rl, ok := fsys.(fs.ReadLinkFS)
	if !ok {
		return nil
	}
	done := "." // the resolved directory, free of symlinks
	rest := name
	for links := 0; rest != ""; {
		var el string
		el, rest, _ = strings.Cut(rest, "/")
		switch el {
		case "", ".":
			continue
		case "..":
			if done == "." {
				return ErrEscapes
			}
			done = path.Dir(done)
			continue
		}
		p := path.Join(done, el)
		fi, err := rl.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = p
			continue
		}
		if links++; links > maxLinks {
			return fmt.Errorf("more than %d symlinks", maxLinks)
		}
		target, err := rl.ReadLink(p)
		if err != nil {
			return err
		}
		if target == "" || path.IsAbs(target) || filepath.IsAbs(target) {
			return ErrEscapes
		}
		// The target is relative to the link's directory (done) and is
		// resolved element by element too: it may hold links and "..".
		if rest != "" {
			target += "/" + rest
		}
		rest = target
	}
	return nil
}

// BytesRead is how many bytes the Hasher has read from files itself, not
// counting digests handed to it by Seed.
func (h *Hasher) BytesRead() int64 { return h.read.Load() }

func (h *Hasher) entry(p, algo string) *memoEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.memo[algo+"\x00"+p]
	if m == nil {
		m = &memoEntry{}
		h.memo[algo+"\x00"+p] = m
	}
	return m
}

// Prefetch starts hashing the regular file p in the background when it is
// larger than minSize, so that reading it overlaps with other work; a later
// Sum waits for that one read instead of starting another. Smaller files,
// missing names and names that leave the root are left to Sum. At most
// GOMAXPROCS files are prefetched at once per Hasher.
func (h *Hasher) Prefetch(ctx context.Context, p, algo string, minSize int64) {
	if _, err := NewHash(algo); err != nil {
		return
	}
	st, err := h.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() <= minSize {
		return
	}
	m := h.entry(p, algo)
	go func() {
		select {
		case h.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-h.sem }()
		m.once.Do(func() { m.digest, m.size, m.err = h.sum(ctx, p, algo) })
	}()
}

// Seed records the hex digest and size of the regular file p (root-relative)
// taken by a caller that already read the file whole: the dispatcher holds
// small files in memory once for every check, and the digest of those bytes
// is what the other checks scanned. A later Sum of p and algo returns it
// without opening the file. A digest already taken is kept.
func (h *Hasher) Seed(p, algo, digest string, size int64) {
	m := h.entry(p, algo)
	m.once.Do(func() { m.digest, m.size = digest, size })
}

// ErrNotRegular is returned for names that are not regular files (devices,
// FIFOs, directories): they are never read.
var ErrNotRegular = errors.New("not a regular file")

// Sum returns the hex digest and size of the regular file p (root-relative).
// Symlinks are followed only while they stay inside the root.
func (h *Hasher) Sum(ctx context.Context, p, algo string) (string, int64, error) {
	m := h.entry(p, algo)
	m.once.Do(func() { m.digest, m.size, m.err = h.sum(ctx, p, algo) })
	return m.digest, m.size, m.err
}

// bufPool holds the read buffers: 1 MiB, as sha256sum reads.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

func (h *Hasher) sum(ctx context.Context, p, algo string) (string, int64, error) {
	hh, err := NewHash(algo)
	if err != nil {
		return "", 0, err
	}
	if kd, ok := h.fsys.(KnownDigests); ok {
		if hx, n, ok := kd.FileDigest(p, algo); ok {
			return hx, n, nil
		}
	}
	f, err := h.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !st.Mode().IsRegular() {
		return "", 0, ErrNotRegular
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	n, err := io.CopyBuffer(hh, ctxReader{ctx, f}, *bp)
	h.read.Add(n)
	if err != nil {
		return "", n, fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(hh.Sum(nil)), n, nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Verify checks entries written in a manifest in directory dir (root-relative,
// "." for the root), hashing up to GOMAXPROCS files at once. Results come in
// the entries' order.
func (h *Hasher) Verify(ctx context.Context, dir string, entries []Entry) []Result {
	res := make([]Result, len(entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, e := range entries {
		res[i].Entry = e
		p, err := SafeJoin(dir, e.Name)
		if err != nil {
			res[i].Status, res[i].Reason = Rejected, err.Error()
			continue
		}
		res[i].Path = p
		g.Go(func() error {
			got, size, err := h.Sum(gctx, p, e.Algorithm)
			res[i].Got, res[i].Size = got, size
			switch {
			case errors.Is(err, fs.ErrNotExist):
				res[i].Status, res[i].Reason = Missing, "no such file"
			case errors.Is(err, ErrEscapes), err != nil && strings.Contains(err.Error(), "escapes"):
				res[i].Status, res[i].Reason = Rejected, "a symlink leads out of the directory"
			case errors.Is(err, ErrNotRegular):
				res[i].Status, res[i].Reason = Rejected, err.Error()
			case err != nil:
				res[i].Status, res[i].Reason = Unread, err.Error()
			case got != e.Digest:
				res[i].Status, res[i].Reason = Mismatch, fmt.Sprintf("%s is %s, manifest says %s", e.Algorithm, got, e.Digest)
			default:
				res[i].Status = OK
			}
			return nil
		})
	}
	_ = g.Wait()
	// Conflicting duplicates: the same file listed with two digests.
	seen := map[string]string{}
	for i := range res {
		r := &res[i]
		if r.Path == "" {
			continue
		}
		k := r.Algorithm + "\x00" + r.Path
		if d, ok := seen[k]; ok && d != r.Digest && r.Status == OK {
			r.Status, r.Reason = Mismatch, "listed again with a different digest"
		}
		seen[k] = r.Digest
	}
	return res
}
