package secrets

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestJoinLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a\nb\n", "a\nb\n"},
		{"x = (\"ab\"\n     \"cd\")\ny = 1\n", "x = (\"abcd\")\n\ny = 1\n"},
		{"x = (\n  \"ab\"\n  \"cd\"\n  \"ef\"\n)\n", "x = \n\"abcdef\"\n\n\n)\n"},
		{"k = 'ab' +\n  'cd';\n", "k = 'abcd';\n\n"},
		{"k = 'ab'\n  + 'cd';\n", "k = 'abcd';\n\n"},
		{"k = \"ab\" \\\n  \"cd\"\n", "k = \"abcd\"\n\n"},
		{"k = \"ab\"\r\n  \"cd\"\r\n", "k = \"abcd\"\r\n\r\n"[:len("k = \"abcd\"\r\n")] + "\n"},
		{"export T=ab\\\ncd\\\nef rest\nnext\n", "export T=abcdef rest\n\n\nnext\n"},
		{"curl -H x \\\n  --data y\n", "curl -H x \\\n  --data y\n"}, // flags, not a word
		{"key: >-\n  abc\n  def\nother: 1\n", "key: abc def\n\n\nother: 1\n"},
		{"key: |\n  abc\n  def\n", "key: abc\n\n  def\n"},
		{"- key: >\n    abc\n\n    def\n", "- key: abc\n\n\n    def\n"},
		{"key: >\nnot indented\n", "key: >\nnot indented\n"},
		{"\"name\",\"token\"\n\"alice\",\"abc\"\n", "\"name\",\"token\"\n\"alice\",\"abc\"\n"}, // CSV
		{"s = \"\"\"\n\"doc\"\n", "s = \"\"\"\n\"doc\"\n"},                                     // a triple quote opens
		{"a = \"x\" + 'y\n'z'\n", "a = \"x\" + 'y\n'z'\n"},                                     // the quote opens a literal
		{"x = \"ab\"\n\"cd", "x = \"ab\"\n\"cd"},                                               // never closes
		{"x = \"ab\"\n\"cd\"", "x = \"abcd\"\n"},
		{"x\\\ny", "xy\n"},
		{"KEY = (\n    \"ab\"\n    \"cd\"\n)\n", "KEY = \n\"abcd\"\n\n)\n"},
		{"key: (\n  'ab'\n)\n", "key: \n'ab'\n)\n"},
		{"f(\n  \"ab\"\n)\n", "f(\n  \"ab\"\n)\n"},         // a call's argument
		{"x == (\n  \"ab\"\n)\n", "x == (\n  \"ab\"\n)\n"}, // a comparison
		{"x = (\n  a, \"b\"\n)\n", "x = (\n  a, \"b\"\n)\n"},
	} {
		got := string(joinLines([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("joinLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Count(got, "\n") != strings.Count(tc.in, "\n") {
			t.Errorf("joinLines(%q) = %q: line breaks changed", tc.in, got)
		}
	}
}

// TestSplitValues: a credential written over several lines is found, at
// the first line of its value (issue 37, item 2).
func TestSplitValues(t *testing.T) {
	g := newFake(37)
	hf := "hf_" + g.str(alnum, 34)
	gq := "gsk_" + g.str(alnum, 52)
	wb := g.hex(40)
	co := g.str(alnum, 40)
	s := newScanner(t)
	for _, tc := range []struct {
		name, path, text, rule string
		line                   int
	}{
		{"python parentheses", "train.py", "import os\nHF_TOKEN = (\"" + hf[:20] + "\"\n            \"" + hf[20:] + "\")\nprint(1)\n", "secrets/huggingface-token", 2},
		{"python parentheses, value below", "train.py", "login(\n    token=(\n        \"" + hf[:10] + "\"\n        \"" + hf[10:] + "\"\n    )\n)\n", "secrets/huggingface-token", 3},
		{"python backslash", "train.py", "key = \"" + gq[:30] + "\" \\\n    \"" + gq[30:] + "\"\n", "secrets/groq-api-key", 1},
		{"js plus at the end", "client.ts", "const groq = new Groq({\n  apiKey: \"" + gq[:25] + "\" +\n    \"" + gq[25:] + "\",\n});\n", "secrets/groq-api-key", 2},
		{"js plus at the start", "client.js", "const k = '" + gq[:25] + "'\n  + '" + gq[25:] + "';\n", "secrets/groq-api-key", 1},
		{"shell continuation", "job.sh", "#!/bin/bash\nexport HF_TOKEN=" + hf[:15] + "\\\n" + hf[15:] + "\nsrun python train.py\n", "secrets/huggingface-token", 2},
		{"python parentheses below the name", "settings.py", "CO_API_KEY = (\n    \"" + co[:20] + "\"\n    \"" + co[20:] + "\"\n)\n", "secrets/cohere-api-key", 2},
		{"yaml folded", "config.yaml", "logging:\n  WANDB_API_KEY: >-\n    " + wb + "\n  project: x\n", "secrets/wandb-api-key-legacy", 2},
		{"yaml literal", "config.yaml", "env:\n  CO_API_KEY: |\n    " + co + "\n", "secrets/cohere-api-key", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := scan(t, s, tc.path, tc.text)
			var got []string
			for _, f := range fs {
				got = append(got, fmt.Sprintf("%s:%d", f.RuleID, f.Line))
			}
			if want := fmt.Sprintf("%s:%d", tc.rule, tc.line); len(got) != 1 || got[0] != want {
				t.Errorf("findings %v, want [%s]", got, want)
			}
		})
	}
}

func FuzzJoinLines(f *testing.F) {
	for _, s := range []string{"x = (\"ab\"\n \"cd\")\n", "k = 'a' +\n 'b'\n", "a\\\nb\n", "k: >-\n  a\n  b\n", "k: |\n  a\n", "\"a\",\"b\"\n\"c\"\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := joinLines(b)
		if bytes.Count(got, []byte{'\n'}) != bytes.Count(b, []byte{'\n'}) {
			t.Fatalf("joinLines(%q) = %q: line breaks changed", b, got)
		}
		if len(got) > len(b)+1 {
			t.Fatalf("joinLines(%q) = %q: longer", b, got)
		}
		// nextJoinEnd's word arithmetic finds what a byte loop finds.
		want, ws := -1, 0
		for i, start := 0, 0; i < len(b); i++ {
			if b[i] == '\n' {
				if i > start && joinEnd[b[i-1]] {
					want, ws = i, start
					break
				}
				start = i + 1
			}
		}
		if s, e := nextJoinEnd(b, 0); e != want || e >= 0 && s != ws {
			t.Fatalf("nextJoinEnd(%q) = %d, %d, want %d, %d", b, s, e, ws, want)
		}
	})
}
