package secrets

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/sources"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/suppress"
)

// TestGitleaksIgnoreCompat writes a .gitleaksignore from the fingerprints
// gitleaks itself gives (its library's directory scan, as `gitleaks dir`
// runs it) and checks that mlwarden suppresses exactly those findings.
func TestGitleaksIgnoreCompat(t *testing.T) {
	s := newScanner(t)
	g := newFake(21)
	dir := t.TempDir()
	files := map[string]string{
		"app.env":       "HF_TOKEN=hf_" + g.str(alnum, 34) + "\n",
		"jobs/run.sh":   "#!/bin/sh\nexport HF_TOKEN=hf_" + g.str(alnum, 34) + "\n",
		"keep/other.sh": "export HF_TOKEN=hf_" + g.str(alnum, 34) + "\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := detect.NewDetector(s.rs.cfg)
	found, err := d.DetectSource(context.Background(), &sources.Files{Config: &s.rs.cfg, Path: dir, Sema: d.Sema})
	if err != nil {
		t.Fatal(err)
	}
	var ignore []string
	for _, f := range found {
		if !strings.Contains(f.File, "keep") {
			ignore = append(ignore, f.Fingerprint)
		}
	}
	if len(ignore) != 2 {
		t.Fatalf("gitleaks found %d findings to ignore (%v), want 2", len(ignore), found)
	}
	ig := suppress.ParseGitleaksIgnore([]byte("# reviewed\n\n" + strings.Join(ignore, "\n") + "\n"))

	res := &scanners.Result{}
	for name, body := range files {
		fs, err := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Kind: scanners.ArtifactFile, Target: dir, TargetKind: scanners.KindDir, Path: name}, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Findings = append(res.Findings, fs...)
	}
	if n := ig.Apply(res, dir, s.GitleaksRuleID); n != 2 {
		t.Errorf("suppressed %d, want 2 (entries %q)", n, ignore)
	}
	for _, f := range res.Findings {
		if want := !strings.HasPrefix(f.Path, "keep/"); (f.Suppressed != "") != want {
			t.Errorf("%s: suppressed %q", f.Path, f.Suppressed)
		}
	}
}

func TestGitleaksIgnoreEntries(t *testing.T) {
	s := newScanner(t)
	id, ok := s.GitleaksRuleID("secrets/huggingface-token")
	if !ok {
		t.Fatal("no gitleaks id for secrets/huggingface-token")
	}
	find := func(path, commit string, line int) scanners.Finding {
		return scanners.Finding{RuleID: "secrets/huggingface-token", Check: scanners.CheckSecrets, Target: "repo", Path: path, Commit: commit, Line: line}
	}
	for _, tt := range []struct {
		name  string
		entry string
		f     scanners.Finding
		want  bool
	}{
		{"file entry", "a/b.env:" + id + ":3", find("a/b.env", "", 3), true},
		{"dot slash", "./a/b.env:" + id + ":3", find("a/b.env", "", 3), true},
		{"windows separators", `a\b.env:` + id + ":3", find("a/b.env", "", 3), true},
		{"other line", "a/b.env:" + id + ":4", find("a/b.env", "", 3), false},
		{"commit entry", "c0ffee:a/b.env:" + id + ":3", find("a/b.env", "c0ffee", 3), true},
		{"other commit", "beef:a/b.env:" + id + ":3", find("a/b.env", "c0ffee", 3), false},
		{"global entry covers every commit", "a/b.env:" + id + ":3", find("a/b.env", "c0ffee", 3), true},
		{"other rule", "a/b.env:generic-api-key:3", find("a/b.env", "", 3), false},
	} {
		res := &scanners.Result{Findings: []scanners.Finding{tt.f}}
		suppress.ParseGitleaksIgnore([]byte(tt.entry)).Apply(res, "repo", s.GitleaksRuleID)
		if got := res.Findings[0].Suppressed != ""; got != tt.want {
			t.Errorf("%s: suppressed = %v, want %v", tt.name, got, tt.want)
		}
	}
}
