package misconfig

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrefilterWords: the one-pass prefilters answer what a search for
// each word answered, on the fixtures and on text made of pieces of the
// words.
func TestPrefilterWords(t *testing.T) {
	oracle := func(lower []byte, words []string) bool {
		for _, w := range words {
			if bytes.Contains(lower, []byte(w)) {
				return true
			}
		}
		return false
	}
	commands := []string{"-m ", "--donate-level", "jupyter_token"}
	for p := range programs {
		commands = append(commands, p)
	}
	for k := range serviceEnv {
		commands = append(commands, strings.ToLower(k))
	}
	var texts []string
	filepath.WalkDir("../../fixtures", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil && len(b) < 1<<20 {
				texts = append(texts, string(b))
			}
		}
		return err
	})
	r := rand.New(rand.NewPCG(1, 2))
	all := append(append(append([]string{}, commands...), poolHosts...), minerBinaries...)
	for range 5000 {
		var b strings.Builder
		for k := r.IntN(6); k >= 0; k-- {
			w := all[r.IntN(len(all))]
			switch r.IntN(5) {
			case 0:
				w = w[:r.IntN(len(w)+1)]
			case 1:
				w = strings.ToUpper(w)
			case 2: // lower-cased to ASCII letters by bytes.ToLower only
				w = strings.NewReplacer("k", "\u212a", "i", "\u0130").Replace(w)
			}
			b.WriteString(w + []string{" ", "", "\n", "x"}[r.IntN(4)])
		}
		texts = append(texts, b.String())
	}
	traces := append(append([]string{"stratum"}, poolHosts...), minerBinaries...)
	seen := [5]int{}
	for _, text := range texts {
		lower := bytes.ToLower([]byte(text))
		// What Scan searches: the text itself, lower-cased first only
		// where that finds more.
		words := []byte(text)
		if foldsToASCII(words) {
			words = lower
		}
		for i, c := range []struct {
			got   bool
			words []string
		}{
			{mayHaveCommands(lower), commands},
			{containsAny(lower, poolHostWords()), poolHosts},
			{containsAny(lower, minerBinaryWords()), minerBinaries},
			{mayHaveCommands(words), commands},
			{minerTraceWords().NextBytes(words, 0) >= 0, traces},
		} {
			want := oracle(lower, c.words)
			if c.got != want {
				t.Fatalf("prefilter %d on %q: %v, a search for each word says %v", i, text, c.got, want)
			}
			if want {
				seen[i]++
			}
		}
	}
	for i, n := range seen {
		if n == 0 || n == len(texts) {
			t.Errorf("prefilter %d: %d of %d texts match: both answers are not exercised", i, n, len(texts))
		}
	}
}
