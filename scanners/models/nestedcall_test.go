package models

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestNestedCallIsHigh: a pickle that calls a global outside the safe
// tier is high when it is hidden in a constant of another pickle (no
// pickler writes one there), medium at the top level; a nested pickle of
// plain data stays quiet.
func TestNestedCallIsHigh(t *testing.T) {
	call := "cbuiltins\nprint\n(S'hi'\ntR."
	call2 := "\x80\x02cbuiltins\nprint\nX\x02\x00\x00\x00hi\x85R."
	data := "(dp0\nS'a'\nI1\ns."
	wrap := func(inner string) []byte { return []byte("(dp0\nS'payload'\nS'" + inner + "'\ns.") }
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		body []byte
		want scanners.Severity // 0 for no pickle-unknown-global finding
	}{
		{"top level", []byte(call), scanners.SeverityMedium},
		{"base64 in a string", wrap(base64.StdEncoding.EncodeToString([]byte(call))), scanners.SeverityHigh},
		{"hex in a string", wrap(hex.EncodeToString([]byte(call))), scanners.SeverityHigh},
		{"raw in a bytes constant", append(append([]byte{0x80, 3, 'C', byte(len(call2))}, call2...), '.'), scanners.SeverityHigh},
		{"plain data nested", wrap(base64.StdEncoding.EncodeToString([]byte(data))), 0},
	} {
		p := filepath.Join(dir, "m.pkl")
		if err := os.WriteFile(p, tt.body, 0o644); err != nil {
			t.Fatal(err)
		}
		fs, _ := scanAt(t, New(), p)
		var got scanners.Severity
		for _, f := range fs {
			if f.RuleID == "models/pickle-unknown-global" {
				got = f.Severity
			}
		}
		if got != tt.want {
			t.Errorf("%s: pickle-unknown-global %v, want %v (%v)", tt.name, got, tt.want, fs)
		}
	}
}

// scanAt scans a file outside the fixtures as the dispatcher would, named
// by its base name.
func scanAt(t testing.TB, s *Scanner, path string) ([]scanners.Finding, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: filepath.Base(path), Size: st.Size()}
	head := make([]byte, scanners.HeadSize)
	n, _ := f.ReadAt(head, 0)
	if !s.Wants(a, head[:n]) {
		return nil, false
	}
	fs, err := s.Scan(t.Context(), a, &section{f, st.Size()})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return fs, true
}
