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
