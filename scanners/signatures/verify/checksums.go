package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
)

// ChecksumsOptions says what to verify the files of a target against.
type ChecksumsOptions struct {
	// Manifests are checksum manifests (--manifest) whose names are
	// relative to the target's directory. None: for a directory, the
	// manifests found in it (recursively, names relative to each
	// manifest's directory); for a file, its sidecars (FILE.sha256,
	// FILE.sha512).
	Manifests []string
	// ExpectDigest is the digest a file target must have (--expect-digest),
	// as sha256:HEX or sha512:HEX; it replaces manifests.
	ExpectDigest string
	// Strict also fails on unreadable manifest lines and, for a directory,
	// on files no manifest lists (--strict).
	Strict bool
}

// Checksums verifies the files of target, a directory or a file, against
// checksum manifests (GNU and BSD sha256sum/sha512sum lines, SHA256SUMS,
// *.sha256 sidecars) or an expected digest. Names are resolved inside the
// target's directory only: "..", absolute names and symlinks that leave it
// are problems (REJECTED) and are never read. Files are hashed in parallel.
func Checksums(ctx context.Context, target string, o ChecksumsOptions) (*Report, error) {
	rep := &Report{Command: "checksums", Target: target}
	return finish(rep, checksumsInto(ctx, rep, target, o))
}

// manifest is a checksum manifest to verify.
type manifest struct {
	dir  string // root-relative directory its names are relative to
	name string
	data []byte
}

func checksumsInto(ctx context.Context, rep *Report, target string, o ChecksumsOptions) error {
	fi, err := os.Stat(target)
	if err != nil {
		return err
	}
	rootDir, single := target, ""
	if !fi.IsDir() {
		rootDir, single = filepath.Dir(target), filepath.Base(target)
	}
	r, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer r.Close()
	fsys := r.FS()
	h := checksums.NewHasher(fsys)
	if o.ExpectDigest != "" {
		algo, hx, err := checksums.ParseDigest(o.ExpectDigest)
		if err != nil {
			return fmt.Errorf("--expect-digest: %w", err)
		}
		if single == "" {
			return errors.New("--expect-digest needs a FILE, not a directory")
		}
		res := h.Verify(ctx, ".", []checksums.Entry{{Name: single, Algorithm: algo, Digest: hx}})
		rep.Checked = 1
		rep.Digest = algo + ":" + res[0].Got
		addChecksumProblems(rep, h, res)
		return ctx.Err()
	}
	mans, err := findManifests(fsys, target, single, o.Manifests)
	if err != nil {
		return err
	}
	if len(mans) == 0 {
		return fmt.Errorf("no checksum manifest found in %s (looked for SHA256SUMS, SHA512SUMS, *.sha256, *.sha512); give --manifest or --expect-digest", target)
	}
	listed := map[string]bool{}
	for _, m := range mans {
		entries, lineErrs := checksums.Parse(m.name, m.data, checksums.AlgorithmFor(m.name))
		if o.Strict {
			for _, le := range lineErrs {
				rep.Problems = append(rep.Problems, Problem{Path: m.name, Status: "MALFORMED", Reason: le.Error()})
			}
		}
		if single != "" {
			entries = slices.DeleteFunc(entries, func(e checksums.Entry) bool { return path.Join(m.dir, e.Name) != single })
		}
		res := h.Verify(ctx, m.dir, entries)
		for _, x := range res {
			listed[x.Path] = true
		}
		rep.Checked += len(res)
		addChecksumProblems(rep, h, res)
		listed[m.name] = true
	}
	if rep.Checked == 0 {
		return fmt.Errorf("the manifests list no file to verify")
	}
	if o.Strict && single == "" {
		_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			if d.Type().IsRegular() && !listed[p] && !checksums.IsManifestName(d.Name()) {
				rep.Problems = append(rep.Problems, Problem{Path: p, Status: "UNLISTED", Reason: "no manifest lists this file"})
			}
			return nil
		})
	}
	return ctx.Err()
}

// findManifests reads the manifests given, or else those in fsys (the
// target's directory): every manifest of a directory target; for a file
// target (single), the file itself when it is one and sidecars named for
// it, or else FILE.sha256 and FILE.sha512 beside it.
func findManifests(fsys fs.FS, target, single string, given []string) ([]manifest, error) {
	var mans []manifest
	for _, m := range given {
		data, err := readFile(m, maxManifest)
		if err != nil {
			return nil, err
		}
		mans = append(mans, manifest{dir: ".", name: m, data: data})
	}
	if len(given) > 0 {
		return mans, nil
	}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() || !checksums.IsManifestName(d.Name()) || (single != "" && p != single && checksums.SidecarTarget(d.Name()) != single) {
			return nil
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxManifest))
		if err != nil {
			return err
		}
		mans = append(mans, manifest{dir: path.Dir(p), name: p, data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if single != "" && len(mans) == 0 {
		// A FILE with FILE.sha256 beside it.
		for _, ext := range []string{".sha256", ".sha512"} {
			if data, err := readFile(target+ext, 1<<20); err == nil {
				mans = append(mans, manifest{dir: ".", name: single + ext, data: data})
			}
		}
	}
	return mans, nil
}

// addChecksumProblems adds the entries of res that did not verify. A small
// file that differs and is a git-LFS pointer is said to be one.
func addChecksumProblems(rep *Report, h *checksums.Hasher, res []checksums.Result) {
	for _, x := range res {
		if x.Status == checksums.OK {
			continue
		}
		reason := x.Reason
		if x.Status == checksums.Mismatch && x.Size < checksums.LFSPointerMax {
			if f, err := h.Open(x.Path); err == nil {
				data, _ := io.ReadAll(io.LimitReader(f, checksums.LFSPointerMax))
				f.Close()
				if p, ok := checksums.ParseLFSPointer(data); ok {
					reason = fmt.Sprintf("a git-LFS pointer, not the file: the content (sha256 %s, %d bytes) was never fetched; run git lfs pull", p.OID, p.Size)
				}
			}
		}
		name := x.Path
		if name == "" {
			name = x.Name
		}
		rep.Problems = append(rep.Problems, Problem{Path: name, Status: string(x.Status), Reason: reason})
	}
}
