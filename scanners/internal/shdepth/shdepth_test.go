package shdepth

import (
	"bytes"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func nest(open, close string, n int) string {
	return strings.Repeat(open, n) + "x" + strings.Repeat(close, n)
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		src  string
		ok   bool
	}{
		{"plain script", "#!/bin/bash\nset -e\nfor f in $(ls); do\n  if [ -f \"$f\" ]; then echo \"$(basename \"$f\")\"; fi\ndone\n", true},
		{"parens in quotes and comments", "echo '((((((' \"(((( )\" # ((((((\n", true},
		{"case patterns", "case $x in a) echo ;; b) echo ;; esac\n", true},
		{"many flat commands", strings.Repeat("echo $(date) $((1+2)) ${HOME}\n", 5000), true},
		{"200,000 nested $(", nest("$(", ")", 200_000), false},
		{"nested subshells", nest("(", ")", MaxDepth+1), false},
		{"nested braces", nest("{ ", "; }", MaxDepth+1), false},
		{"nested ifs", nest("if a; then ", "; fi", MaxDepth+1), false},
		{"nested arithmetic", nest("$((", "))", MaxDepth), false},
		{"nested quoted substitutions", nest("\"$(", ")\"", MaxDepth+1), false},
		{"closers in double quotes do not hide depth", strings.Repeat("$( echo \")\" ", MaxDepth+1), false},
		{"case clauses do not hide depth", strings.Repeat("$( case x in a) ;; b) ;; c) ", MaxDepth+1), false},
		{"too many openers", strings.Repeat("$(echo \")\"; a=')' ", MaxOpens/2+1) + strings.Repeat(")", MaxOpens), false},
	}
	for _, c := range cases {
		if _, ok := Check([]byte(c.src)); ok != c.ok {
			t.Errorf("%s: ok = %v, want %v", c.name, ok, c.ok)
		}
	}
}

// TestBoundsTheParser: whatever passes Check parses within a small stack;
// the real parser agrees with Check on scripts just under the limit.
func TestBoundsTheParser(t *testing.T) {
	for _, k := range []struct{ o, c string }{{"$(", ")"}, {"(", ")"}, {"{ ", "; }"}, {"if a; then ", "; fi"}, {"\"$(", ")\""}} {
		src := nest(k.o, k.c, MaxDepth/2-1) // a quoted substitution is two levels
		if _, ok := Check([]byte(src)); !ok {
			t.Errorf("%q × %d refused", k.o, MaxDepth/2-1)
		}
		if _, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader([]byte(src)), ""); err != nil {
			t.Errorf("%q × %d: %v", k.o, MaxDepth/2-1, err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte("echo $(a \"$(b)\") `c` ${d:-$(e)}"))
	f.Add([]byte(nest("$(", ")", 64)))
	f.Add([]byte("case x in a) if b; then (c); fi ;; esac"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		depth, ok := Check(src)
		if depth < 0 || ok && depth > MaxDepth {
			t.Fatalf("depth %d ok %v", depth, ok)
		}
	})
}
