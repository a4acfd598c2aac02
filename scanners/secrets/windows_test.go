package secrets

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ahocorasick "github.com/BobuSumisu/aho-corasick"

	"github.com/mlwarden/mlwarden/internal/literal"
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
	// Segments that decode, between long runs of code: the decoding
	// detector sees only their windows.
	tok := func() string { return "hf_" + g.str(alnum, 34) }
	var plain strings.Builder // no keyword of any rule; one fragment with a case between two
	for i := range 150 {
		fmt.Fprintf(&plain, "    x = layer_norm(x) + residual * 0.%d\n", i)
	}
	code := plain.String()
	if wins, whole := with.win.windows(code, nil); whole || len(wins) > 0 {
		t.Fatalf("the filler holds keywords: %v", wins)
	}
	for i, enc := range []string{
		"env: " + base64.StdEncoding.EncodeToString([]byte("export HF_TOKEN="+tok())) + "\n",
		"blob = \"" + hex.EncodeToString([]byte("HF_TOKEN="+tok())) + "\"\n",
		"url = https://example.test/?token=" + url.QueryEscape("HF_TOKEN="+tok()+"&x") + "\n",
		"data:\n  v: " + base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte("HF_TOKEN="+tok())))) + "\n",
		"s = \"\\u0068\\u0066\\u005f" + tok()[3:] + "\"\n",
		"key = " + base64.StdEncoding.EncodeToString([]byte("wandb "+g.hex(40))) + "\n",
		"api_key =\n  '" + base64.StdEncoding.EncodeToString([]byte(g.str(alnum, 30))) + "'\n",
		"U+0041 U+0042\nHF_TOKEN=" + tok() + "\n",
		"k: " + g.str(b64, 44) + "\n",
		// Matches over more lines than a window keeps (spansBlock).
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: prod\n  labels:\n    app: db\ntype: Opaque\ndata:\n  password: " +
			base64.StdEncoding.EncodeToString([]byte(g.str(alnum, 24))) + "\n",
		"run: |\n  curl \\\n    -X POST \\\n    -H 'Accept: json' \\\n    --user deploy:" + g.str(alnum, 16) + " \\\n    https://example.test/\n",
	} {
		texts[fmt.Sprintf("enc%d.yaml", i)] = code + enc + code + "token: " + tok() + "\n" + code
		// Between code dense with keywords, which goes whole: the
		// decoding passes keep to the sites' windows (detectDecodingIn).
		texts[fmt.Sprintf("dense%d.py", i)] = filler.String()[:8000] + enc + filler.String()[:6000] + "token: " + tok() + "\n" + enc
	}
	decoded := 0
	for name, text := range texts {
		for _, f := range compare(t, with, without, name, []byte(text)) {
			if strings.Contains(f.Message, "after decoding") {
				decoded++
			}
		}
	}
	if decoded < 4 {
		t.Errorf("only %d findings made by decoding: the decode windows are not exercised", decoded)
	}
	for ci, c := range ruleCases {
		for seed := uint64(1); seed <= 2; seed++ {
			g := newFake(uint64(ci)*100 + seed)
			pos, _ := c.pos(g)
			for _, body := range []string{pos, c.neg(g)} {
				compare(t, with, without, c.path, []byte(filler.String()+body+filler.String()))
				compare(t, with, without, c.path, []byte(body))
			}
			if seed == 1 {
				// Encoded in a fragment dense with keywords.
				e := encodings[1+ci%3]
				compare(t, with, without, c.path, []byte(filler.String()[:5000]+"x = \""+e.enc(pos)+"\"\n"+filler.String()[:2000]+e.enc(pos)+"\n"))
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

func compare(t *testing.T, with, without *Scanner, name string, text []byte) []scanners.Finding {
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
	return w
}

// TestKeywordFinder: the finder reports a keyword where an Aho-Corasick
// trie over the ASCII-lower-cased text does — the first hit at or after
// every position — on every rule's cases in mixed case and on random text
// made of keyword pieces, so the windows are the same as with the trie.
func TestKeywordFinder(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var kws []string
	for _, r := range s.rs.cfg.Rules {
		for _, k := range r.Keywords {
			kws = append(kws, strings.ToLower(k))
		}
	}
	kws = append(kws, "q", "z9") // one- and two-byte keywords, as a user's rules may have
	slices.Sort(kws)
	kws = slices.Compact(kws)
	f := literal.New(kws)
	trie := ahocorasick.NewTrieBuilder().AddStrings(kws).Build()
	g := newFake(31)
	var texts []string
	for ci, c := range ruleCases {
		g := newFake(uint64(ci) + 7)
		pos, _ := c.pos(g)
		texts = append(texts, pos, strings.ToUpper(pos), c.neg(g))
	}
	for range 3000 {
		texts = append(texts, literalText(g, kws, 12, 6, " \n_=abcdefghijklmnopqrstuvwxyzKEY\xc4\xb0"))
	}
	var hits int
	for _, raw := range texts {
		want := make([]int, len(raw)+1) // the first hit at or after each position
		for i := range want {
			want[i] = -1
		}
		trie.Walk(asciiLowerForTest(raw), func(end, n, _ int64) bool {
			p := int(end - n + 1)
			for i := p; i >= 0 && (want[i] < 0 || want[i] > p); i-- {
				want[i] = p
			}
			return true
		})
		for from := range len(raw) + 1 {
			if got := f.Next(raw, from); got != want[from] {
				t.Fatalf("next(%q, %d) = %d, the trie says %d", raw, from, got, want[from])
			}
		}
		if want[0] >= 0 {
			hits++
		}
	}
	if hits < len(texts)/2 {
		t.Fatalf("only %d of %d texts hold a keyword", hits, len(texts))
	}
}

func asciiLowerForTest(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

// The prefixed detector's one pass serves the windower and every window:
// within(find(raw), s, e) is find(raw[s:e]), and nextKeyword over the hits
// is the windower's own keyword pass, on text made of the rules' literals,
// their halves and filler, with windows cut at random.
func TestFindWithin(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	pd, ok := s.plain().(*prefixedDetector)
	if !ok {
		t.Fatal("the built-in rules' plain detector is not the prefixed one")
	}
	kwIDs := s.win.keywordIDs(pd)
	if kwIDs == nil {
		t.Fatal("a window keyword is not among the prefixed detector's literals")
	}
	lits := slices.Sorted(maps.Keys(pd.ids))
	g := newFake(17)
	var hits, parts []litHit
	for range 2000 {
		raw := literalText(g, lits, 30, 8, " \n_=abcdefghijklmnopqrstuvwxyzKEY")
		hits = pd.find(raw, hits[:0])
		for range 5 {
			start := g.r.IntN(len(raw) + 1)
			end := start + g.r.IntN(len(raw)-start+1)
			parts = pd.within(hits, start, end, parts[:0])
			if want := pd.find(raw[start:end], nil); !slices.Equal(parts, want) {
				t.Fatalf("within(find(%q), %d, %d) = %v, find of the part %v", raw, start, end, parts, want)
			}
		}
		next := nextKeyword(hits, kwIDs)
		for from := 0; from <= len(raw); from += 1 + g.r.IntN(8) {
			if got, want := next(from), s.win.kw.Next(raw, from); got != want {
				t.Fatalf("nextKeyword(%q) from %d = %d, the windower's pass %d", raw, from, got, want)
			}
		}
	}
}

// literalText is up to parts+1 pieces, each one of lits, in upper case, cut
// in half, or up to filler bytes from alphabet.
func literalText(g *fakeGen, lits []string, parts, filler int, alphabet string) string {
	var b strings.Builder
	for k := g.r.IntN(parts); k >= 0; k-- {
		switch lit := lits[g.r.IntN(len(lits))]; g.r.IntN(4) {
		case 0:
			b.WriteString(strings.ToUpper(lit))
		case 1:
			b.WriteString(lit[:len(lit)/2])
		case 2:
			b.WriteString(g.str(alphabet, 1+g.r.IntN(filler)))
		default:
			b.WriteString(lit)
		}
	}
	return b.String()
}
