// Package scannertest helps test checks: it scans in-memory files or a
// directory through the real dispatcher, reads fuzz seed corpora, and runs
// the conformance test every check passes (Conformance).
package scannertest

import (
	"context"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mlwarden/mlwarden/internal/unpack"
	"github.com/mlwarden/mlwarden/scanners"
)

// Source returns a directory target named name whose files are those of
// fsys. It hands every regular file to the sink in lexical order, with
// Artifact.FS set to fsys, and skips .git directories, symlinks and special
// files, as the file system source does.
func Source(name string, fsys fs.FS) scanners.Source {
	return &fsSource{name: name, fsys: fsys}
}

type fsSource struct {
	name string
	fsys fs.FS
}

func (s *fsSource) Target() scanners.Target {
	return scanners.Target{Name: s.name, Kind: scanners.KindDir}
}

func (s *fsSource) Walk(ctx context.Context, sink scanners.Sink) error {
	return fs.WalkDir(s.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			sink.Error(scanners.Error{Target: s.name, Path: p, Message: err.Error()})
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return s.file(sink, p)
	})
}

// file hands one file to the sink. A file that cannot be read is an error
// of the target, and the walk goes on.
func (s *fsSource) file(sink scanners.Sink, p string) error {
	f, err := s.fsys.Open(p)
	if err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: p, Message: err.Error()})
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: p, Message: err.Error()})
		return nil
	}
	a := &scanners.Artifact{
		Kind:       scanners.ArtifactFile,
		Target:     s.name,
		TargetKind: scanners.KindDir,
		Path:       p,
		Size:       fi.Size(),
		Mode:       fi.Mode(),
		FS:         s.fsys,
	}
	return sink.Artifact(a, f)
}

// Run scans src with the scanners through the dispatcher and returns the
// whole result, errors included, for the caller to judge.
func Run(t testing.TB, src scanners.Source, scs ...scanners.Scanner) *scanners.Result {
	t.Helper()
	return scanners.NewDispatcher(scs).Run(context.Background(), src)
}

// MapFS turns slash paths and contents into a file system.
func MapFS(files map[string][]byte) fstest.MapFS {
	m := make(fstest.MapFS, len(files))
	for p, data := range files {
		m[p] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	return m
}

// Scan scans the in-memory files, slash paths to contents, as one
// directory target named "mem" and returns the findings in report order.
// Every error the run records fails the test.
func Scan(t testing.TB, files map[string][]byte, scs ...scanners.Scanner) []scanners.Finding {
	t.Helper()
	return ScanFS(t, MapFS(files), scs...)
}

// ScanFS is Scan over a file system such as an fstest.MapFS.
func ScanFS(t testing.TB, fsys fs.FS, scs ...scanners.Scanner) []scanners.Finding {
	t.Helper()
	return findings(t, Run(t, Source("mem", fsys), scs...))
}

// ScanDir scans the directory on disk as a directory target named dir,
// with Artifact.FS the directory opened as an os.Root, as the file system
// source gives it, and returns the findings. Every error the run records
// fails the test.
func ScanDir(t testing.TB, dir string, scs ...scanners.Scanner) []scanners.Finding {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	defer root.Close()
	return findings(t, Run(t, Source(dir, root.FS()), scs...))
}

func findings(t testing.TB, res *scanners.Result) []scanners.Finding {
	t.Helper()
	for _, e := range res.Errors {
		t.Errorf("scan error: %v", e)
	}
	return res.Findings
}

// DecoderMissing reports whether fs says a file was not opened because its
// decoder is not in this build: mlwarden-sbatch's build (-tags
// mlwarden_sbatch) opens no xz, zstd or 7z (internal/unpack), and a test
// case that needs one skips there. Never true in the default build.
func DecoderMissing(fs []scanners.Finding) bool {
	return slices.ContainsFunc(fs, func(f scanners.Finding) bool {
		return strings.Contains(f.Message+f.Evidence, unpack.ErrNotInBuild.Error())
	})
}
