package secrets

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestWindowsSame: keyword windows find what whole fragments find — on
// every rule's generated cases, on files with credentials between long runs
// of code that holds keywords, on multi-line matches (.netrc, a generic
// key = over a line break) and on the ML code fixtures.
func TestWindowsSame(t *testing.T) {
	with, err := New()
	if err != nil {
		t.Fatal(err)
	}
	without, err := New(func(s *Scanner) { s.noWindows = true })
	if err != nil {
		t.Fatal(err)
	}
	if with.win == nil {
		t.Fatal("no windower: a built-in rule has no keyword")
	}
	g := newFake(21)
	var filler strings.Builder
	for i := range 150 {
		fmt.Fprintf(&filler, "    tokens_%d = tokenizer(batch[%d], max_length=512)  # key: padding\n", i, i)
		fmt.Fprintf(&filler, "    x = layer_norm(x) + residual * 0.%d\n", i)
	}
	texts := map[string]string{
		"train.py": filler.String() + "HF_TOKEN = \"hf_" + g.str(alnum, 34) + "\"\n" + filler.String() +
			"api_key = \"" + g.str(alnum, 32) + "\"\n" + filler.String(),
		".netrc":   strings.Repeat("# comment line with no keyword at all here\n", 900) + "machine api.wandb.ai\n  login user\n  password " + g.hex(40) + "\n",
		"conf.py":  filler.String() + "secret_key =\n    '" + g.str(alnum, 40) + "'\n" + filler.String(),
		"long.txt": strings.Repeat("x", 20000) + " token=" + g.str(alnum, 30) + "\n" + filler.String(),
	}
	for name, text := range texts {
		compare(t, with, without, name, []byte(text))
	}
	for ci, c := range ruleCases {
		for seed := uint64(1); seed <= 2; seed++ {
			g := newFake(uint64(ci)*100 + seed)
			pos, _ := c.pos(g)
			for _, body := range []string{pos, c.neg(g)} {
				compare(t, with, without, c.path, []byte(filler.String()+body+filler.String()))
				compare(t, with, without, c.path, []byte(body))
			}
		}
	}
	filepath.WalkDir("../../fixtures/secrets", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			compare(t, with, without, p, b)
		}
		return nil
	})
}

func compare(t *testing.T, with, without *Scanner, name string, text []byte) {
	t.Helper()
	key := func(fs []scanners.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s:%d:%s:%s", f.RuleID, f.Line, f.Evidence, f.Suppressed))
		}
		slices.Sort(out)
		return out
	}
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: filepath.Base(name), Size: int64(len(text))}
	w, err := scanners.ScanBytes(context.Background(), with, a, text)
	if err != nil {
		t.Fatal(err)
	}
	wo, err := scanners.ScanBytes(context.Background(), without, a, text)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(key(w), key(wo)) {
		t.Errorf("%s: with windows %v, whole fragments %v", name, key(w), key(wo))
	}
}
