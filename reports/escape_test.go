package reports_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
)

// hostile is a result whose names, notes, evidence and errors carry what a
// scanned repository or image can put in a file name or a file: ESC and OSC
// sequences (clear the screen, set the window title), newlines that forge a
// summary line, bidirectional overrides, bytes that are not UTF-8.
func hostile() *scanners.Result {
	forged := "\nmlwarden: 1 target, 0 critical, 0 high, 0 medium, 0 low, 0 info\n"
	res := &scanners.Result{
		Version: scanners.ReportVersion,
		Targets: []scanners.Target{{Name: "repo\x1b]0;pwned\x07", Kind: scanners.KindDir, Notes: []string{"note\x1b[2J"}}},
		Findings: []scanners.Finding{{
			RuleID: "secrets/huggingface-token", Check: "secrets", Severity: scanners.SeverityCritical,
			Message: "Hugging Face token in " + "x\x1b[2J\x1b[H.sh" + forged,
			Target:  "repo\x1b]0;pwned\x07", Path: "x\x1b[2J\x1b[H.sh" + forged, Line: 1,
			Evidence: "hf_Ab…xy\r\x1b[1A", Layer: "sha256:ab\x9b", Commit: "c0ffee\u202e",
			Fingerprint: "sha256:1",
		}},
		Errors: []scanners.Error{{Target: "repo\x1b]0;pwned\x07", Path: "bad\xffname\u200b", Message: "read: \x1b[31mno\tway"}},
	}
	res.Summary = scanners.Summarize(res.Findings)
	return res
}

func TestTextEscapesControlCharacters(t *testing.T) {
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		if err := reports.Write(&buf, "text", hostile(), reports.Options{Rules: rules, Color: color}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !color {
			golden := filepath.Join("testdata", "hostile.txt")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if out != string(want) {
				t.Errorf("text output differs from %s (go test ./reports -update to accept):\n%s", golden, out)
			}
		}
		// The only ESC bytes are mlwarden's own colours; no line but the last
		// is a summary.
		plain := out
		for _, c := range []string{"\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[1;35m", "\x1b[1;31m", "\x1b[33m", "\x1b[36m"} {
			plain = strings.ReplaceAll(plain, c, "")
		}
		for _, bad := range []string{"\x1b", "\x07", "\r", "\x9b", "\u202e", "\u200b", "\xff"} {
			if strings.Contains(plain, bad) {
				t.Errorf("color=%v: output holds %q:\n%s", color, bad, out)
			}
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "mlwarden: ") && i != len(lines)-1 {
				t.Errorf("color=%v: line %d forges a summary: %q", color, i+1, l)
			}
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain ascii":           "plain ascii",
		"naïve 日本語":             "naïve 日本語",
		"a\nb\tc\rd":            `a\nb\tc\rd`,
		"\x1b]0;title\x07":      `\x1b]0;title\x07`,
		"\x00\x7f":              `\x00\x7f`,
		"csi\u009b2J":           `csi\u009b2J`,
		"bidi\u202egnp.exe":     `bidi\u202egnp.exe`,
		"not utf8 \xff\xfe":     `not utf8 \xff\xfe`,
		"zero\u200bwidth\ufeff": `zero\u200bwidth\ufeff`,
	} {
		if got := reports.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEscape: whatever the input, the output is valid UTF-8 with no control
// or hidden character, and plain text is left as it is.
func FuzzEscape(f *testing.F) {
	f.Add("plain")
	f.Add("x\x1b]0;pwned\x07\nmlwarden: forged\r")
	f.Add("bidi\u202e\u2066\xff\xfe\u009b")
	f.Fuzz(func(t *testing.T, s string) {
		out := reports.Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q: not UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0x200b {
				t.Fatalf("Escape(%q) = %q holds %U", s, out, r)
			}
		}
		if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f }) && out != s {
			t.Fatalf("Escape(%q) = %q changed plain text", s, out)
		}
	})
}
