package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// FS is a Store in a directory on this machine: one file per entry, named
// by the hash of its key, written to a temporary file and renamed into
// place (several processes may share the directory). A hit refreshes the
// file's time; Prune deletes entries unused for longer than the time to
// live, then the least recently used until the directory is under 90% of
// its bound.
type FS struct {
	dir      string
	maxBytes int64
	ttl      time.Duration
}

// NewFS returns the store in dir (created on first write); maxBytes and ttl
// bound it (negative: no bound).
func NewFS(dir string, maxBytes int64, ttl time.Duration) *FS {
	return &FS{dir: dir, maxBytes: maxBytes, ttl: ttl}
}

// Dir is the store's directory.
func (f *FS) Dir() string { return f.dir }

const fsExt = ".mlc"

func (f *FS) file(key string) string {
	sum := sha256.Sum256([]byte(key))
	kind := "x"
	if parts := strings.SplitN(key, "/", 3); len(parts) == 3 {
		kind = parts[1]
	}
	return filepath.Join(f.dir, kind, hex.EncodeToString(sum[:20])+fsExt)
}

// maxFSEntry bounds a file read back.
const maxFSEntry = 256 << 20

// Get implements Store.
func (f *FS) Get(_ context.Context, key string) ([]byte, error) {
	name := f.file(key)
	fh, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrMiss
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if f.ttl > 0 && time.Since(fi.ModTime()) > f.ttl {
		return nil, ErrMiss
	}
	data, err := readAllLimit(fh, maxFSEntry)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(name, now, now) // used: pruned last
	return data, nil
}

// Put implements Store.
func (f *FS) Put(_ context.Context, key string, value []byte, _ time.Duration) error {
	name := f.file(key)
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(value)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// Close implements Store.
func (f *FS) Close() error { return nil }

// PruneEvery is how often Prune walks the directory at most (one process or
// several sharing it: a marker file's time says when it last did).
const PruneEvery = 10 * time.Minute

// Prune deletes entries unused for longer than the time to live, then the
// least recently used until the store is under 90% of its bound. Errors
// only leave more behind: entries are rebuilt by the next scan that needs
// them.
func (f *FS) Prune(now time.Time) {
	if f.maxBytes < 0 && f.ttl < 0 {
		return
	}
	marker := filepath.Join(f.dir, ".pruned")
	if fi, err := os.Stat(marker); err == nil && now.Sub(fi.ModTime()) < PruneEvery && fi.ModTime().Before(now.Add(time.Minute)) {
		return
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return
	}
	if fh, err := os.Create(marker); err == nil {
		fh.Close()
		_ = os.Chtimes(marker, now, now)
	}
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var entries []entry
	var total int64
	kinds, _ := os.ReadDir(f.dir)
	for _, k := range kinds {
		if !k.IsDir() {
			continue
		}
		kdir := filepath.Join(f.dir, k.Name())
		files, _ := os.ReadDir(kdir)
		for _, e := range files {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			p := filepath.Join(kdir, e.Name())
			switch {
			case strings.HasPrefix(e.Name(), ".tmp-"):
				if now.Sub(fi.ModTime()) > time.Hour { // left by a killed writer
					os.Remove(p)
				}
				continue
			case !strings.HasSuffix(e.Name(), fsExt):
				continue
			case f.ttl >= 0 && now.Sub(fi.ModTime()) > f.ttl:
				os.Remove(p)
				continue
			}
			entries = append(entries, entry{p, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
	}
	if f.maxBytes < 0 || total <= f.maxBytes {
		return
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range entries {
		if total <= f.maxBytes/10*9 {
			break
		}
		if os.Remove(e.path) == nil {
			total -= e.size
		}
	}
}
