package secrets

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	_ "unsafe" // go:linkname, to read gitleaks' pattern

	"github.com/zricethezav/gitleaks/v8/detect/codec"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

//go:linkname gitleaksEncodingsRe github.com/zricethezav/gitleaks/v8/detect/codec.encodingsRe
var gitleaksEncodingsRe *regexp.Regexp

// codeFiller is source-like text: long identifiers, paths, hashes, numbers,
// none of which decodes to text.
func codeFiller(g *fakeGen, lines int) string {
	var b strings.Builder
	forms := []string{
		"        self.attention_dropout_probability = config.hidden_dropout_prob_%d\n",
		"    checkpoint_path = \"/scratch/experiments/llama/run_%d/checkpoints/latest\"\n",
		"# pinned: git+https://git.example.test/org/repo@%s\n",
		"def test_gradient_accumulation_with_mixed_precision_%d():\n",
		"    sha = \"%s\"\n",
		"    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # %d\n",
		"vocab_size: %d\nmax_position_embeddings: 4096\n",
	}
	for i := range lines {
		f := forms[i%len(forms)]
		if strings.Contains(f, "%s") {
			fmt.Fprintf(&b, f, g.str(hexLow, 40))
		} else {
			fmt.Fprintf(&b, f, g.r.IntN(100000))
		}
	}
	return b.String()
}

func TestDecodeGatePattern(t *testing.T) {
	if gitleaksEncodingsRe == nil || gitleaksEncodingsRe.String() != encodingsPattern {
		t.Fatalf("gitleaks' encodings pattern changed; update encodingsPattern and the decode rules in decodegate.go:\n%v", gitleaksEncodingsRe)
	}
}

func TestMayDecode(t *testing.T) {
	g := newFake(5)
	secret := "HF_TOKEN=hf_" + g.str(alnum, 34)
	for _, tt := range []struct {
		name string
		text string
		want bool
	}{
		{"code", codeFiller(g, 200), false},
		{"base64 of text", "data: " + base64.StdEncoding.EncodeToString([]byte(secret)) + "\n", true},
		{"base64url of text", "x=" + base64.RawURLEncoding.EncodeToString([]byte(secret+"?>")) + "\n", true},
		{"hex of text", "blob = " + hex.EncodeToString([]byte(secret)) + "\n", true},
		{"percent", "u = " + url.QueryEscape("a b&c") + "%41\n", true},
		{"unicode escape", `s = "\u0068\u0066"` + "\n", true},
		{"U+ code points", "U+0041 U+0042\nU+0043\n", true},
		{"random base64", "k: " + g.str(b64, 40) + "\n", false},
		{"sha256", "digest: " + g.str(hexLow, 64) + "\n", false},
		{"empty", "", false},
	} {
		if got := mayDecode(tt.text); got != tt.want {
			t.Errorf("%s: mayDecode = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDecodeGateMatchesGitleaks is the gate's contract: on every fragment,
// the detector the gate picks reports exactly what gitleaks' decoding
// detector reports.
func TestDecodeGateMatchesGitleaks(t *testing.T) {
	s := newScanner(t)
	g := newFake(9)
	tok := func() string { return "hf_" + g.str(alnum, 34) }
	encodedLines := []func() string{
		func() string {
			return "env: " + base64.StdEncoding.EncodeToString([]byte("export HF_TOKEN="+tok())) + "\n"
		},
		func() string { return "blob = \"" + hex.EncodeToString([]byte("HF_TOKEN="+tok())) + "\"\n" },
		func() string {
			return "url = https://example.test/?token=" + url.QueryEscape("HF_TOKEN="+tok()+"&x") + "\n"
		},
		func() string {
			return "data:\n  token: " + base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte("HF_TOKEN="+tok())))) + "\n"
		},
		func() string { return "plain HF_TOKEN=" + tok() + "\n" },
		func() string { return "k: " + g.str(b64, 44) + "\n" },
	}
	var fragments []string
	for i := range 24 {
		var b strings.Builder
		b.WriteString(codeFiller(g, 60+i))
		if i%3 != 2 { // some fragments are code only
			b.WriteString(encodedLines[i%len(encodedLines)]())
			b.WriteString(codeFiller(g, 20))
		}
		fragments = append(fragments, b.String())
	}
	key := func(fs []engine.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s %d:%d-%d:%d %s %v", f.RuleID, f.StartLine, f.StartColumn, f.EndLine, f.EndColumn, f.Secret, f.Tags))
		}
		slices.Sort(out)
		return out
	}
	decodedSeen, gated := 0, 0
	for i, raw := range fragments {
		frag := engine.Fragment{Raw: raw, FilePath: "f.yaml", StartLine: 1}
		want := key(s.det.DetectContext(context.Background(), frag))
		var det fragmentDetector = s.det
		decoding := true
		if !mayDecode(raw) {
			det, decoding = s.plain(), false
			gated++
		}
		got := key(det.DetectContext(context.Background(), frag))
		if !slices.Equal(got, want) {
			t.Errorf("fragment %d: gate picked the %s detector:\ngot  %q\nwant %q", i, map[bool]string{true: "decoding", false: "plain"}[decoding], got, want)
		}
		for _, w := range want {
			if strings.Contains(w, "decoded:") {
				decodedSeen++
			}
		}
	}
	if decodedSeen == 0 || gated == 0 {
		t.Errorf("the corpus does not exercise both paths: %d decoded findings, %d fragments gated", decodedSeen, gated)
	}
}

// BenchmarkEngineCode is the secrets check on 1 MB of source-like text.
func BenchmarkEngineCode(b *testing.B) {
	s := newScanner(b)
	text := []byte(codeFiller(newFake(3), 14000))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Path: "train.py"}, text)
	}
}

// FuzzDecodeGate checks the gate's soundness against gitleaks' own decoder:
// whenever gitleaks would decode a segment of the text, the gate must send
// it to the decoding detector.
func FuzzDecodeGate(f *testing.F) {
	g := newFake(4)
	for _, s := range []string{
		"", "plain text\n", "U+0041 U+0042\n", `\u0068\u0066`, "%41%42", "a%4", "token=" + base64.StdEncoding.EncodeToString([]byte("HF_TOKEN=hf_"+g.str(alnum, 34))),
		hex.EncodeToString([]byte("password=hunter2hunter2")), "x=" + g.str(b64, 44) + "==", codeFiller(g, 5),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if _, segs := codec.NewDecoder().Decode(raw, nil); len(segs) > 0 && !mayDecode(raw) {
			t.Fatalf("gitleaks decodes %d segment(s) of %q but the gate skips the decoding pass", len(segs), raw)
		}
	})
}

var encodingsRegexp = regexp.MustCompile(encodingsPattern)

// mayDecodeRegexp is the gate as it was written first, with gitleaks'
// regexp run line by line: the oracle mayDecode must agree with.
func mayDecodeRegexp(raw string) bool {
	re := encodingsRegexp
	for _, line := range strings.Split(raw, "\n") {
		for i := 0; i+1 < len(line); i++ {
			if line[i] == 'U' && line[i+1] == '+' && isHexAt(line, i+2, 4) {
				return true // the gate gives up on "U+hhhh"
			}
		}
		for _, idx := range re.FindAllStringSubmatchIndex(line, -1) {
			switch {
			case idx[2] >= 0, idx[4] >= 0:
				return true
			case idx[6] >= 0:
				if hexDecodes(line[idx[6]:idx[7]]) {
					return true
				}
			case idx[8] >= 0:
				if base64Decodes(line[idx[8]:idx[9]]) {
					return true
				}
			}
		}
	}
	return false
}

// TestMayDecodeMatchesRegexp compares the gate with the regexp it stands
// for on random text made of the bytes the pattern cares about: runs of
// hex digits and base64 letters of every length around 16 and 32, '=',
// escapes, "U+", line breaks and UTF-8.
func TestMayDecodeMatchesRegexp(t *testing.T) {
	g := newFake(11)
	pieces := []func() string{
		func() string { return g.str(hexLow, 28+g.r.IntN(10)) },
		func() string { return g.str("0123456789ABCDEF", 30+g.r.IntN(6)) },
		func() string { return g.str(b64, 12+g.r.IntN(10)) },
		func() string { return base64.StdEncoding.EncodeToString([]byte(g.str(alnum, 9+g.r.IntN(12)))) },
		func() string { return base64.RawURLEncoding.EncodeToString([]byte(g.str(alnum, 9+g.r.IntN(12)))) },
		func() string { return hex.EncodeToString([]byte(g.str(alnum, 15+g.r.IntN(4)))) },
		func() string {
			return []string{"=", "==", "===", " ", "\n", "-", "_", "/", "+", "é", "\xff", "U", "U+", "u", "\\"}[g.r.IntN(15)]
		},
		func() string {
			return []string{"%4", "%41", "%zz", "\\u004", "\\u0041", "\\\\U0041", "U+004", "U+0041", "U+0041 "}[g.r.IntN(9)]
		},
		func() string { return g.str("ghijklmnopqrstuvwxyz", 1+g.r.IntN(20)) },
	}
	var diffs, yes int
	for n := 0; n < 40000; n++ {
		var b strings.Builder
		for k := 1 + g.r.IntN(8); k > 0; k-- {
			p := pieces[g.r.IntN(len(pieces))]
			if g.r.IntN(9) > 0 && n%3 != 0 {
				p = pieces[g.r.IntN(6)] // mostly segments, so both answers occur
			}
			b.WriteString(p())
		}
		raw := b.String()
		want := mayDecodeRegexp(raw)
		if want {
			yes++
		}
		if got := mayDecode(raw); got != want {
			if diffs++; diffs <= 5 {
				t.Errorf("mayDecode(%q) = %v, the regexp says %v", raw, got, want)
			}
		}
	}
	if diffs > 0 {
		t.Errorf("%d of 40000 texts disagree", diffs)
	}
	if yes < 4000 || yes > 36000 {
		t.Errorf("the texts do not exercise both answers: %d of 40000 may decode", yes)
	}
	t.Logf("%d of 40000 may decode", yes)
}

// FuzzMayDecodeRegexp checks the gate against the regexp it stands for.
func FuzzMayDecodeRegexp(f *testing.F) {
	for _, s := range []string{"", "%41", "\\u0041", "U+0041", strings.Repeat("a1", 16), "YWJjZGVmZ2hpamtsbW5vcA==", "meta-llama/Llama-3-1555B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if got, want := mayDecode(raw), mayDecodeRegexp(raw); got != want {
			t.Fatalf("mayDecode(%q) = %v, the regexp says %v", raw, got, want)
		}
	})
}

// decodeSitesWalk is decodeSites' run search byte by byte, as it once was:
// the oracle of the probing search.
func decodeSitesWalk(raw string, site func(at int) bool) {
	if escapesAt(raw, "U+", 4, site, true) {
		return
	}
	if escapesAt(raw, "%", 2, site, false) || escapesAt(raw, `\u`, 4, site, false) || escapesAt(raw, `\U`, 4, site, false) {
		return
	}
	n := len(raw)
	for i := 0; i < n; i++ {
		if !b64Set[raw[i]] {
			continue
		}
		j := i + 1
		for j < n && b64Set[raw[j]] {
			j++
		}
		if j-i >= 16 && runDecodes(raw[i:j], raw[j:]) && !site(i) {
			return
		}
		i = j
	}
}

// sitesOf lists every site decode reports, with stop asking it to stop
// after that many.
func sitesOf(decode func(string, func(int) bool), raw string, stop int) []int {
	var out []int
	decode(raw, func(at int) bool {
		out = append(out, at)
		return len(out) != stop
	})
	return out
}

// decodeSiteCases are runs of 15, 16 and 17 bytes that decode, at the
// start, the end, side by side and after short words.
func decodeSiteCases() []string {
	b64 := "YWJjZGVmZ2hpamtsbW5vcA"  // 22 bytes of base64 of text
	hex := strings.Repeat("6162", 8) // 32 hex digits of text
	var out []string
	for _, run := range []string{b64[:15], b64[:16], b64[:17], b64, hex, hex[:31]} {
		for _, pre := range []string{"", " ", "x = ", strings.Repeat("ab cd ", 7), strings.Repeat("w", 15) + " "} {
			for _, post := range []string{"", " ", "==", "\n" + run, " " + strings.Repeat("z", 16)} {
				out = append(out, pre+run+post)
			}
		}
	}
	return out
}

func TestDecodeSitesSame(t *testing.T) {
	for _, raw := range decodeSiteCases() {
		for _, stop := range []int{0, 1, 2} {
			if got, want := sitesOf(decodeSites, raw, stop), sitesOf(decodeSitesWalk, raw, stop); !slices.Equal(got, want) {
				t.Errorf("decodeSites(%q) stopping after %d = %v, the byte-by-byte search %v", raw, stop, got, want)
			}
		}
	}
}

func FuzzDecodeSites(f *testing.F) {
	for _, s := range decodeSiteCases()[:40] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if got, want := sitesOf(decodeSites, raw, 0), sitesOf(decodeSitesWalk, raw, 0); !slices.Equal(got, want) {
			t.Fatalf("decodeSites(%q) = %v, the byte-by-byte search %v", raw, got, want)
		}
	})
}
