package modelsig

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"golang.org/x/sync/errgroup"
)

// DefaultSignatureName is where model_signing writes its signature.
const DefaultSignatureName = "model.sig"

// GitPaths are ignored by default, as model_signing does.
var GitPaths = []string{".git", ".gitattributes", ".github", ".gitignore"}

// Options tune how a model directory is compared with its signature.
type Options struct {
	// IgnorePaths are ignored in addition to the signed ignore_paths
	// (relative to the model directory).
	IgnorePaths []string
	// KeepGitPaths stops ignoring GitPaths.
	KeepGitPaths bool
	// IgnoreUnsignedFiles checks only the files the signature names; files
	// added beside them are not reported.
	IgnoreUnsignedFiles bool
	// SignatureName is the signature file's path relative to the model
	// directory, ignored when hashing ("" for model.sig).
	SignatureName string
}

// Result is the outcome of comparing a model with its signed manifest.
type Result struct {
	Files    int      // files checked
	Missing  []string // signed, not present
	Extra    []string // present, not signed
	Modified []string // present with another digest (or other shard layout)
	Unsafe   []string // symlinks the signature does not allow, or that leave the root
}

// OK reports whether the model matches its signature.
func (r *Result) OK() bool {
	return len(r.Missing)+len(r.Extra)+len(r.Modified)+len(r.Unsafe) == 0
}

func checkResourceName(name, method string) error {
	if method == "shards" {
		p, _, _, err := splitShard(name)
		if err != nil {
			return err
		}
		name = p
	}
	switch {
	case name == ".":
		return nil
	case name == "":
		return errors.New("empty name")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute path")
	case strings.ContainsAny(name, "\\\x00"):
		return errors.New("backslash or NUL in name")
	case len(name) >= 2 && name[1] == ':':
		return errors.New("drive letter in name")
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." || el == "" || el == "." {
			return errors.New(`".", ".." or empty element in name`)
		}
	}
	return nil
}

// splitShard splits "path:start:end".
func splitShard(name string) (p string, start, end int64, err error) {
	i := strings.LastIndexByte(name, ':')
	if i < 0 {
		return "", 0, 0, errors.New("shard name without :start:end")
	}
	j := strings.LastIndexByte(name[:i], ':')
	if j < 0 {
		return "", 0, 0, errors.New("shard name without :start:end")
	}
	start, err1 := strconv.ParseInt(name[j+1:i], 10, 64)
	end, err2 := strconv.ParseInt(name[i+1:], 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start {
		return "", 0, 0, errors.New("bad shard range")
	}
	return name[:j], start, end, nil
}

func ignored(p string, ignores []string) bool {
	for _, ig := range ignores {
		ig = strings.Trim(path.Clean(ig), "/")
		if ig == "." || ig == "" {
			continue
		}
		if p == ig || strings.HasPrefix(p, ig+"/") {
			return true
		}
	}
	return false
}

// CheckModel compares the model at dir (relative to h's root; a directory or
// a single file) with st, hashing through h so that reads never leave the
// root.
func CheckModel(ctx context.Context, h *checksums.Hasher, dir string, st *Statement, o Options) (*Result, error) {
	fsys := h.FS()
	info, err := h.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", dir, err)
	}
	sig := o.SignatureName
	if sig == "" {
		sig = DefaultSignatureName
	}
	ignores := append(append(slices.Clone(st.Serialization.IgnorePaths), o.IgnorePaths...), sig)
	if !o.KeepGitPaths {
		ignores = append(ignores, GitPaths...)
	}
	res := &Result{}
	// files: name relative to the model → path relative to the root.
	files := map[string]string{}
	if !info.IsDir() {
		files["."] = dir
		// Some signers name a single file by its base name.
		for _, r := range st.Resources {
			if n, _, _, _ := splitShardOrName(r.Name, st.Serialization.Method); n == path.Base(dir) {
				files = map[string]string{n: dir}
			}
		}
	} else {
		err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
			if dir == "." {
				rel = p
			}
			if rel == "" || rel == "." {
				return nil
			}
			if ignored(rel, ignores) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				if !st.Serialization.AllowSymlinks {
					res.Unsafe = append(res.Unsafe, rel+" (symlink; the signature does not allow symlinks)")
					return nil
				}
				fi, err := h.Stat(p) // follows, inside the root only
				if err != nil {
					res.Unsafe = append(res.Unsafe, rel+" (symlink leads out of the model or nowhere)")
					return nil
				}
				if fi.Mode().IsRegular() {
					files[rel] = p
				}
			case d.Type().IsRegular():
				files[rel] = p
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walk model %s: %w", dir, err)
		}
	}
	expected := map[string][]Resource{} // file name → its resources
	for _, r := range st.Resources {
		n, _, _, _ := splitShardOrName(r.Name, st.Serialization.Method)
		expected[n] = append(expected[n], r)
	}
	for n := range expected {
		if _, ok := files[n]; !ok {
			res.Missing = append(res.Missing, n)
		}
	}
	var check []string
	for n := range files {
		if _, ok := expected[n]; !ok {
			if st.Serialization.Method == "shards" {
				// Empty files have no shard, so a signature cannot name them.
				if fi, err := h.Stat(files[n]); err == nil && fi.Size() == 0 {
					continue
				}
			}
			if !o.IgnoreUnsignedFiles {
				res.Extra = append(res.Extra, n)
			}
			continue
		}
		check = append(check, n)
	}
	slices.Sort(check)
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, n := range check {
		g.Go(func() error {
			same, err := sameFile(gctx, h, files[n], expected[n], st.Serialization)
			if err != nil {
				return fmt.Errorf("hash %s: %w", files[n], err)
			}
			mu.Lock()
			defer mu.Unlock()
			res.Files++
			if !same {
				res.Modified = append(res.Modified, n)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, l := range [][]string{res.Missing, res.Extra, res.Modified, res.Unsafe} {
		slices.Sort(l)
	}
	return res, nil
}

func splitShardOrName(name, method string) (string, int64, int64, error) {
	if method == "shards" {
		return splitShard(name)
	}
	return name, 0, 0, nil
}

// sameFile hashes the file at p as the serialization says and compares with
// its signed resources.
func sameFile(ctx context.Context, h *checksums.Hasher, p string, want []Resource, ser Serialization) (bool, error) {
	if ser.Method == "files" {
		got, _, err := h.Sum(ctx, p, ser.HashType)
		if err != nil {
			return false, err
		}
		return len(want) == 1 && got == want[0].Digest, nil
	}
	if fi, err := h.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && fi.Size() <= ser.ShardSize {
		// One shard covers the whole file, so its digest is the file's:
		// take it from the memo (the dispatcher's read of a small file).
		if len(want) != 1 {
			return false, nil
		}
		if _, start, end, err := splitShard(want[0].Name); err != nil || start != 0 || end != fi.Size() {
			return false, nil
		}
		got, _, err := h.Sum(ctx, p, ser.HashType)
		if err != nil {
			return false, err
		}
		return got == want[0].Digest, nil
	}
	f, err := h.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	size := fi.Size()
	nshards := (size + ser.ShardSize - 1) / ser.ShardSize // empty files have no shard
	if int64(len(want)) != nshards {
		return false, nil
	}
	byStart := map[int64]Resource{}
	for _, r := range want {
		_, start, end, _ := splitShard(r.Name)
		byStart[start] = r
		if want := min(start+ser.ShardSize, size); end != want {
			return false, nil
		}
	}
	for start := int64(0); start < size; start += ser.ShardSize {
		r, ok := byStart[start]
		if !ok {
			return false, nil
		}
		hh, err := checksums.NewHash(ser.HashType)
		if err != nil {
			return false, err
		}
		if _, err := io.Copy(hh, shard(f, start, min(ser.ShardSize, size-start))); err != nil {
			return false, err
		}
		if hex.EncodeToString(hh.Sum(nil)) != r.Digest {
			return false, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// shard returns the n bytes of f at off: read in place when f is an
// io.ReaderAt (an os.Root's *os.File), otherwise from f's current offset,
// which is off when the shards are read in order, each to its end.
func shard(f fs.File, off, n int64) io.Reader {
	if ra, ok := f.(io.ReaderAt); ok {
		return io.NewSectionReader(ra, off, n)
	}
	return io.LimitReader(f, n)
}
