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

	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/detect/codec"
	"github.com/zricethezav/gitleaks/v8/report"

	"github.com/mlwarden/mlwarden/scanners"
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
	key := func(fs []report.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s %d:%d-%d:%d %s %v", f.RuleID, f.StartLine, f.StartColumn, f.EndLine, f.EndColumn, f.Secret, f.Tags))
		}
		slices.Sort(out)
		return out
	}
	decodedSeen, gated := 0, 0
	for i, raw := range fragments {
		//lint:ignore SA1019 detect.Fragment is what DetectContext, the check's entry point, takes.
		frag := detect.Fragment{Raw: raw, FilePath: "f.yaml", StartLine: 1}
		want := key(s.det.DetectContext(context.Background(), frag))
		det := s.det
		if !mayDecode(raw) {
			det = s.plain()
			gated++
		}
		got := key(det.DetectContext(context.Background(), frag))
		if !slices.Equal(got, want) {
			t.Errorf("fragment %d: gate picked the %s detector:\ngot  %q\nwant %q", i, map[bool]string{true: "decoding", false: "plain"}[det == s.det], got, want)
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
