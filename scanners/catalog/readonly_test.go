//go:build linux

package catalog_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
)

// TestReadAllViewReadOnly: scanners.ReadAll hands every check a view of the
// content the dispatcher holds, shared by the checks that scan it at once,
// so no check may write to it. Every check scans every fixture and test
// file of the module from memory mapped read-only: a write faults, and the
// fault is this test's failure.
func TestReadAllViewReadOnly(t *testing.T) {
	scs, err := catalog.New(catalog.Options{})
	if err != nil {
		// mlwarden-sbatch's build has no signatures check: every check
		// that is in the build.
		scs = nil
		for _, name := range catalog.Names() {
			sc, err := catalog.New(catalog.Options{Checks: []string{name}})
			if err != nil && strings.Contains(err.Error(), "not in this build") {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			scs = append(scs, sc...)
		}
	}
	defer catalog.Close(scs)
	var files []string
	for _, root := range []string{"../../fixtures", ".."} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "fuzz" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() && (root != ".." || strings.Contains(filepath.ToSlash(p), "/testdata/")) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 100 {
		t.Fatalf("only %d files found", len(files))
	}
	ctx := context.Background()
	scanned := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 || len(data) > scanners.SmallFile {
			continue
		}
		ro := readOnly(t, data)
		head := ro[:min(len(ro), scanners.HeadSize)]
		name := "/" + filepath.ToSlash(strings.TrimLeft(p, "./"))
		for _, sc := range scs {
			a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "ro", TargetKind: scanners.KindDir, Path: name, Size: int64(len(ro)), Mode: 0o644}
			if !sc.Wants(a, head) {
				continue
			}
			scanned++
			func() {
				old := debug.SetPanicOnFault(true)
				defer debug.SetPanicOnFault(old)
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s check on %s: %v (did it write to the content ReadAll returned?)", sc.Check(), p, r)
					}
				}()
				sc.Scan(ctx, a, scanners.MemContent(ro))
			}()
		}
		if err := syscall.Munmap(ro); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d files, %d scans from read-only memory", len(files), scanned)
}

// readOnly returns a copy of data in memory mapped read-only.
func readOnly(t *testing.T, data []byte) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, len(data), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	copy(b, data)
	if err := syscall.Mprotect(b, syscall.PROT_READ); err != nil {
		t.Fatal(err)
	}
	return b
}
