//go:build !mlwarden_sbatch

package scan

import (
	"archive/zip"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// fakeHF is a format-valid Hugging Face token made at test time.
func fakeHF(seed uint64) string {
	const al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := []byte("hf_")
	for range 34 {
		b = append(b, al[r.IntN(len(al))])
	}
	return string(b)
}

// TestArchivesInDirectory: a token in a wheel's member is found with
// --checks secrets, at the member and line; --max-archive-depth 0 turns
// archives off; a zip slip name is reported when the models check is off.
func TestArchivesInDirectory(t *testing.T) {
	dir := t.TempDir()
	tok := fakeHF(16)
	f, err := os.Create(filepath.Join(dir, "app-1.0-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.Create("app/config.py")
	w.Write([]byte("import os\n\nHF_TOKEN = \"" + tok + "\"\n"))
	w, _ = zw.Create("../outside.txt")
	w.Write([]byte("x\n"))
	zw.Close()
	f.Close()

	run := func(o Options) *scanners.Result {
		t.Helper()
		s, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Run(context.Background(), Target{Ref: dir})
		if err != nil {
			t.Fatal(err)
		}
		return res.Result
	}
	res := run(Options{Checks: []string{scanners.CheckSecrets}, CUDALocal: false})
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.RuleID+"@"+f.Path)
		if f.RuleID == "secrets/huggingface-token" && (f.Path != "app-1.0-py3-none-any.whl!app/config.py" || f.Line != 3) {
			t.Errorf("token at %s:%d", f.Path, f.Line)
		}
		if strings.Contains(f.Message, tok) {
			t.Error("token in a message")
		}
	}
	if strings.Join(got, ",") != "secrets/archive-member-escapes@app-1.0-py3-none-any.whl,secrets/huggingface-token@app-1.0-py3-none-any.whl!app/config.py" {
		t.Errorf("findings %v", got)
	}
	if res := run(Options{Checks: []string{scanners.CheckSecrets}, MaxArchiveDepth: -1}); len(res.Findings) != 0 {
		t.Errorf("archives off: %+v", res.Findings)
	}
}

// pickleOf is a protocol 2 pickle of one string.
func pickleOf(s string) []byte {
	b := []byte{0x80, 0x02, 'X', byte(len(s)), byte(len(s) >> 8), byte(len(s) >> 16), byte(len(s) >> 24)}
	return append(append(b, s...), 'q', 0, '.')
}

// TestModelStringsWithSecretsOnly: strings inside model files reach the
// secrets check with --checks secrets (issue 16) — a raw pickle and a
// torch-style zip (training_args.bin) — and no models finding is reported.
func TestModelStringsWithSecretsOnly(t *testing.T) {
	dir := t.TempDir()
	raw, zipped := fakeHF(1), fakeHF(2)
	os.WriteFile(filepath.Join(dir, "args.pkl"), pickleOf(raw), 0o644)
	// A pickle not named like one: found once, by the models parsers, not
	// also by the secrets check's strings pass over binaries.
	other := fakeHF(3)
	os.WriteFile(filepath.Join(dir, "state.p"), append(pickleOf(other), make([]byte, 64)...), 0o644)
	f, _ := os.Create(filepath.Join(dir, "training_args.bin"))
	zw := zip.NewWriter(f)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "training_args/data.pkl", Method: zip.Store})
	w.Write(pickleOf(zipped))
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "training_args/version", Method: zip.Store})
	w.Write([]byte("3\n"))
	zw.Close()
	f.Close()
	s, err := New(Options{Checks: []string{scanners.CheckSecrets}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, r := range s.Rules() {
		if r.Check != scanners.CheckSecrets {
			t.Fatalf("rule %s listed with --checks secrets", r.ID)
		}
	}
	res, err := s.Run(context.Background(), Target{Ref: dir})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range res.Findings {
		got[f.Path] = f.RuleID
		if f.Check != scanners.CheckSecrets {
			t.Errorf("finding of %s: %s", f.Check, f.RuleID)
		}
		if f.Path == "training_args.bin" && !strings.Contains(f.Message, "training_args/data.pkl") {
			t.Errorf("message does not name the member: %s", f.Message)
		}
	}
	if got["args.pkl"] != "secrets/huggingface-token" || got["training_args.bin"] != "secrets/huggingface-token" || got["state.p"] != "secrets/huggingface-token" || len(res.Findings) != 3 {
		t.Errorf("findings %+v", res.Findings)
	}
}
