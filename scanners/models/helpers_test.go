package models

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

const fixtures = "../../fixtures/models"

// scanFile scans one file as the dispatcher would: Wants on the head, then
// Scan on the file read in place.
func scanFile(t testing.TB, s *Scanner, path string) ([]scanners.Finding, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	rel, _ := filepath.Rel(fixtures, path)
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "fixtures", Path: filepath.ToSlash(rel), Size: st.Size()}
	head := make([]byte, scanners.HeadSize)
	n, _ := f.ReadAt(head, 0)
	if !s.Wants(a, head[:n]) {
		return nil, false
	}
	fs, err := s.Scan(context.Background(), a, &section{f, st.Size()})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if scannertest.DecoderMissing(fs) {
		t.Skipf("%s: its decoder is not in mlwarden-sbatch's build", path)
	}
	return fs, true
}

type section struct {
	f    *os.File
	size int64
}

func (s *section) Read(p []byte) (int, error)                { return s.f.Read(p) }
func (s *section) ReadAt(p []byte, off int64) (int, error)   { return s.f.ReadAt(p, off) }
func (s *section) Seek(off int64, whence int) (int64, error) { return s.f.Seek(off, whence) }
func (s *section) Size() int64                               { return s.size }

func walkFixtures(t testing.TB, dir string) []string {
	var out []string
	filepath.Walk(filepath.Join(fixtures, dir), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && filepath.Ext(p) != ".txt" && filepath.Ext(p) != ".py" {
			out = append(out, p)
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("no fixtures in %s", dir)
	}
	return out
}

func TestDump(t *testing.T) {
	if os.Getenv("MODELS_DUMP") == "" {
		t.Skip("set MODELS_DUMP=1 to print every fixture's findings")
	}
	s := New()
	for _, dir := range []string{"benign", "malicious", "bypass", "odd"} {
		for _, p := range walkFixtures(t, dir) {
			fs, wanted := scanFile(t, s, p)
			t.Logf("== %s wanted=%v findings=%d", p, wanted, len(fs))
			for _, f := range fs {
				t.Logf("   %s %s | %s", f.Severity, f.RuleID, f.Evidence)
			}
		}
	}
}
