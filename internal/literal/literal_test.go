package literal

import (
	"os"
	"strings"
	"testing"
)

// naive is the first place at or after from where a literal starts in the
// ASCII-lower-cased s, or -1.
func naive(lits []string, s string, from int) int {
	low := []byte(s)
	for i, c := range low {
		low[i] = Lower(c)
	}
	for i := from; i < len(s); i++ {
		for _, l := range lits {
			if l != "" && strings.HasPrefix(string(low[i:]), l) {
				return i
			}
		}
	}
	return -1
}

func TestFinder(t *testing.T) {
	lits := []string{"key", "token", "ey", "q", "api_key", "s.", "hvs.", "Upper"}
	f := New(lits)
	if f.Len() != len(lits) {
		t.Fatalf("Len = %d", f.Len())
	}
	for _, tt := range []struct {
		s    string
		from int
		want int
	}{
		{"", 0, -1},
		{"nothing here", 0, -1},
		{"API_KEY=1", 0, 0},
		{"API_KEY=1", 1, 4},
		{"xx hvs.abc", 0, 3},
		{"Upper", 0, -1}, // a literal with an upper-case letter is never found
		{"tok", 0, -1},
		{"a TOKEN", 1, 2},
		{"a q", 0, 2},
	} {
		if want := naive(lits, tt.s, tt.from); want != tt.want {
			t.Fatalf("the table is wrong: %q from %d: %d", tt.s, tt.from, want)
		}
		want := tt.want
		if got := f.Next(tt.s, tt.from); got != want {
			t.Errorf("Next(%q, %d) = %d, want %d", tt.s, tt.from, got, want)
		}
		if got := f.NextBytes([]byte(tt.s), tt.from); got != want {
			t.Errorf("NextBytes(%q, %d) = %d, want %d", tt.s, tt.from, got, want)
		}
	}
	var ids []int32
	f.Each("a KEY and a token", func(at int, id int32) { ids = append(ids, id) })
	if len(ids) != 3 { // key, ey (in KEY), token
		t.Errorf("Each found %v, want key, ey and token", ids)
	}
}

// FuzzFinder compares Next and Each with a plain search, for a finder with
// one-byte literals (the byte-by-byte loop), one with two-byte literals and
// one with none shorter than three (the block loop, pairMask).
func FuzzFinder(f *testing.F) {
	// Literals across the 64-byte blocks' edges and at the end.
	long := strings.Repeat("x", 61) + "KEY" + strings.Repeat("y", 60) + "aPi_KeY" + strings.Repeat("z", 62) + "ab"
	for _, s := range []string{"", "key", "xKeY token", "s.x", "q", "aPi_KeY", "\xff\xfeey", long, long[:126], long + "c"} {
		f.Add(s, 0)
		f.Add(s, 63)
	}
	lits := []string{"key", "token", "ey", "q", "api_key", "s.", "hvs.", "ab", "abc", "abd"}
	finders := []struct {
		name string
		lits []string
	}{
		{"with one-byte literals", lits},
		{"with two-byte literals", []string{"key", "token", "ey", "api_key", "s.", "hvs.", "ab", "abc", "abd"}},
		{"with none shorter than three", []string{"key", "token", "api_key", "hvs.", "abc", "abd"}},
	}
	fs := make([]*Finder, len(finders))
	for i, c := range finders {
		fs[i] = New(c.lits)
	}
	f.Fuzz(func(t *testing.T, s string, from int) {
		if from < 0 || from > len(s) {
			return
		}
		for i, c := range finders {
			fd, lits := fs[i], c.lits
			if got, want := fd.Next(s, from), naive(lits, s, from); got != want {
				t.Fatalf("%s: Next(%q, %d) = %d, want %d", c.name, s, from, got, want)
			}
			if got, want := fd.NextBytes([]byte(s), from), naive(lits, s, from); got != want {
				t.Fatalf("%s: NextBytes(%q, %d) = %d, want %d", c.name, s, from, got, want)
			}
			got := map[[2]int]bool{}
			last := -1
			fd.Each(s, func(at int, id int32) {
				if naive(lits[id:id+1], s[at:], 0) != 0 {
					t.Fatalf("%s: Each reported %q at %d in %q", c.name, lits[id], at, s)
				}
				if at < last {
					t.Fatalf("%s: Each reported %d after %d in %q", c.name, at, last, s)
				}
				last = at
				got[[2]int{at, int(id)}] = true
			})
			for id, l := range lits {
				for at := naive([]string{l}, s, 0); at >= 0; at = naive([]string{l}, s, at+1) {
					if !got[[2]int{at, id}] {
						t.Fatalf("%s: Each missed %q at %d in %q", c.name, l, at, s)
					}
				}
			}
		}
	})
}

// benchInput is the text and finder of the benchmarks: Go source (this
// package's tests), with the secrets check's kind of literals, words most
// text holds pairs of; BenchmarkEach's text is dense with them (it holds
// this list).
func benchInput(b *testing.B) (string, *Finder) {
	src, err := os.ReadFile("literal_test.go")
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat(string(src), 64)
	b.SetBytes(int64(len(text)))
	return text, New([]string{"key", "token", "secret", "password", "api", "auth", "hf_", "ghp_", "sk-", "akia", "xox", "private", "bearer", "client", "access", "credential", "passwd", "pwd", "stratum", "xmrig", "-----begin"})
}

func BenchmarkNext(b *testing.B) {
	text, f := benchInput(b)
	for b.Loop() {
		for at := f.Next(text, 0); at >= 0; at = f.Next(text, at+1) {
		}
	}
}

func BenchmarkEach(b *testing.B) {
	text, f := benchInput(b)
	n := 0
	for b.Loop() {
		f.Each(text, func(int, int32) { n++ })
	}
}
