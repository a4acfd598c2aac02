package secrets

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// compareDecoding compares the check's decoding passes (detectDecoding)
// with gitleaks' decoding detector over the same rules on raw, and
// returns how many findings gitleaks makes and how many of them come from
// decoded text.
func compareDecoding(t *testing.T, pd *prefixedDetector, ref fragmentDetector, name, raw string) (found, decoded int) {
	t.Helper()
	f := engine.Fragment{Raw: raw, FilePath: name, StartLine: 1}
	wantFs := ref.DetectContext(context.Background(), f)
	want := findingKeys(wantFs)
	got := findingKeys(pd.detectDecoding(context.Background(), f, pd.find(raw, nil), nil, nil, ref))
	if !slices.Equal(got, want) {
		t.Errorf("%s on %q: the decoding passes found\n%s\ngitleaks finds\n%s", name, raw, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, g := range wantFs {
		if hasTag(g.Tags, "decoded:") {
			decoded++
		}
	}
	return len(want), decoded
}

// encodings are the ways a secret sits encoded in text, once and twice,
// as gitleaks' codec decodes them.
var encodings = []struct {
	name string
	enc  func(string) string
}{
	{"plain", func(s string) string { return s }},
	{"base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }},
	{"base64url", func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }},
	{"hex", func(s string) string { return hex.EncodeToString([]byte(s)) }},
	{"percent", func(s string) string { return "%" + hex.EncodeToString([]byte{s[0]}) + url.PathEscape(s[1:]) }},
	{"unicode", unicodeEscaped},
	{"base64 twice", func(s string) string {
		return base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte(s))))
	}},
	{"hex of base64", func(s string) string { return hex.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte(s)))) }},
	{"base64 three times", func(s string) string {
		for range 3 {
			s = base64.StdEncoding.EncodeToString([]byte(s))
		}
		return s
	}},
}

// unicodeEscaped writes every byte of s as \u00hh.
func unicodeEscaped(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	return b.String()
}

// TestDecodingSame: the check's decoding passes find, field for field,
// what gitleaks' decoding detector finds — on every rule's cases encoded
// each way of encodings, alone, beside the plain case (so that a generic
// finding may give way across passes), inside code and with letters that
// fold outside ASCII in the decoded text; and on the fixtures.
func TestDecodingSame(t *testing.T) {
	s := newScanner(t)
	pd, ok := s.plain().(*prefixedDetector)
	if !ok {
		t.Fatalf("the plain detector is %T, not the prefixed one", s.plain())
	}
	g := newFake(71)
	filler := codeFiller(g, 8)
	found, decoded := 0, 0
	add := func(n, d int) { found += n; decoded += d }
	for ci, c := range ruleCases {
		g := newFake(uint64(ci)*10 + 7)
		pos, _ := c.pos(g)
		neg := c.neg(g)
		for _, e := range encodings {
			enc := e.enc(pos)
			add(compareDecoding(t, pd, s.det, c.path, "data = \""+enc+"\"\n"))
			add(compareDecoding(t, pd, s.det, c.path, pos+"\nblob: "+enc+"\n"+pos))
			add(compareDecoding(t, pd, s.det, c.path, filler+"x = '"+enc+"' # "+neg+"\n"+filler))
			add(compareDecoding(t, pd, s.det, c.path, "env: "+enc+" "+e.enc(neg)+" "+enc+"\n"))
		}
	}
	// Decoded text with letters that fold outside ASCII: a Kelvin sign
	// spells the generic rule's "key" for gitleaks, or does not decode (a
	// percent escape decodes to printable ASCII only).
	v := g.str(alnum, 32)
	for _, raw := range []string{
		`api_\u212aey = "` + v + "\"\n", `api_\u212aey = "` + v + "\" # " + base64.StdEncoding.EncodeToString([]byte("token = "+v)) + "\n",
		"api_%C5%BFecret = '" + v + "'\n", `\u0130` + " " + hex.EncodeToString([]byte("password = '"+v+"'")) + "\n",
	} {
		add(compareDecoding(t, pd, s.det, "k.py", raw))
	}
	filepath.WalkDir("../../fixtures", func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<20 && mayDecode(string(b)) {
			add(compareDecoding(t, pd, s.det, p, string(b)))
		}
		return nil
	})
	if decoded < len(ruleCases)*len(encodings) {
		t.Errorf("only %d of %d findings come from decoded text: the decoding passes are not exercised", decoded, found)
	}
	t.Logf("%d findings compared, %d from decoded text", found, decoded)
}

// FuzzDecodingSame compares the check's decoding passes with gitleaks'
// decoding detector on what the fuzzer makes of encoded secrets.
func FuzzDecodingSame(f *testing.F) {
	g := newFake(73)
	for ci, c := range ruleCases {
		if ci%5 == 0 {
			pos, _ := c.pos(g)
			f.Add("x = \"" + encodings[1+ci%(len(encodings)-1)].enc(pos) + "\"\n" + pos)
		}
	}
	f.Add("%C5%BF " + base64.StdEncoding.EncodeToString([]byte("api_key = \""+g.str(alnum, 32)+"\"")))
	s := newScanner(f)
	pd := s.plain().(*prefixedDetector)
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 1<<14 {
			return
		}
		compareDecoding(t, pd, s.det, "f.py", raw)
	})
}
