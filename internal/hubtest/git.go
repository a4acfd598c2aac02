package hubtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// FromGit reads a git repository with git and git-lfs as the Hub stores
// one: every branch and tag becomes a ref, every commit they name a
// commit, each blob a file with its git id, and a blob that is an LFS
// pointer the LFS object it points to (read from .git/lfs/objects, where
// git-lfs keeps what it committed), with its sha256 as the pointer gives it.
func FromGit(typ, id, dir string) (*Repo, error) {
	refs, err := git(dir, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)", "refs/heads", "refs/tags")
	if err != nil {
		return nil, err
	}
	r := &Repo{Type: typ, ID: id, Refs: map[string]string{}, Commits: map[string][]File{}}
	for _, line := range strings.Split(strings.TrimSpace(string(refs)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		commit := f[1]
		if len(f) == 3 {
			commit = f[2] // an annotated tag: the commit it points to
		}
		name := strings.TrimPrefix(strings.TrimPrefix(f[0], "refs/heads/"), "refs/tags/")
		if strings.HasPrefix(f[0], "refs/tags/") {
			r.Tags = append(r.Tags, name)
		}
		r.Refs[name] = commit
		if _, ok := r.Commits[commit]; ok {
			continue
		}
		files, err := gitTree(dir, commit)
		if err != nil {
			return nil, err
		}
		r.Commits[commit] = files
	}
	return r, nil
}

// gitTree lists the blobs of commit.
func gitTree(dir, commit string) ([]File, error) {
	out, err := git(dir, "ls-tree", "-r", "-l", "-z", "--full-tree", commit)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, p, ok := strings.Cut(string(rec), "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 4 || fields[1] != "blob" {
			continue // submodules, symlinks are blobs with mode 120000: kept below
		}
		if fields[0] == "120000" {
			continue // a symlink: the Hub serves no such file
		}
		oid := fields[2]
		size, err := strconv.ParseInt(fields[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ls-tree %s: %q", commit, rec)
		}
		f := File{Path: p, Size: size, OID: oid}
		if size < 1024 {
			data, err := git(dir, "cat-file", "blob", oid)
			if err != nil {
				return nil, err
			}
			if lfsOID, lfsSize, ok := parsePointer(data); ok {
				obj := filepath.Join(gitDir(dir), "lfs", "objects", lfsOID[:2], lfsOID[2:4], lfsOID)
				if _, err := os.Stat(obj); err != nil {
					return nil, fmt.Errorf("%s: LFS object %s not in .git/lfs/objects: %w", p, lfsOID, err)
				}
				f.LFS, f.Size = lfsOID, lfsSize
				f.Open = func() (io.ReaderAt, error) { return os.Open(obj) }
				files = append(files, f)
				continue
			}
			f.Open = func() (io.ReaderAt, error) { return bytes.NewReader(data), nil }
		} else {
			f.Open = func() (io.ReaderAt, error) {
				data, err := git(dir, "cat-file", "blob", oid)
				return bytes.NewReader(data), err
			}
		}
		files = append(files, f)
	}
	return files, nil
}

// parsePointer reads a Git LFS pointer file.
func parsePointer(data []byte) (oid string, size int64, ok bool) {
	if !bytes.HasPrefix(data, []byte("version https://git-lfs.github.com/spec/")) {
		return "", 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "oid":
			oid = strings.TrimPrefix(v, "sha256:")
		case "size":
			size, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return oid, size, len(oid) == 64 && size >= 0
}

func gitDir(dir string) string {
	if out, err := git(dir, "rev-parse", "--absolute-git-dir"); err == nil {
		return strings.TrimSpace(string(out))
	}
	return filepath.Join(dir, ".git")
}

func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
