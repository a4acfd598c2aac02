package secrets

import (
	"bytes"
	"regexp"
	"testing"
)

// concatRe is what joinConcat does by hand.
var concatRe = regexp.MustCompile(`\\?(["'])[ \t]*\+[ \t]*\\?(["'])`)

// joinConcatRegexp is joinConcat by the regexp, as it once was.
func joinConcatRegexp(text []byte) []byte {
	return concatRe.ReplaceAllFunc(text, func(m []byte) []byte {
		sub := concatRe.FindSubmatch(m)
		if !bytes.Equal(sub[1], sub[2]) {
			return m // "a" + 'b': not one literal's quotes
		}
		return nil
	})
}

func TestJoinConcat(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, ``},
		{`a + b`, `a + b`},
		{`"sk-proj-" + "abc"`, `"sk-proj-abc"`},
		{`'a'+'b'+'c'`, `'abc'`},
		{`"a" + 'b'`, `"a" + 'b'`},
		{`"a"	+	"b"`, `"ab"`},
		{`\"a\" + \"b\"`, `\"ab\"`},
		{`"a" +` + "\n" + `"b"`, `"a" +` + "\n" + `"b"`}, // not on one line
		{`'+'+'`, `+'`},
		{`""+""`, `""`},
		{`"+"`, ``},
		{`+"a"`, `+"a"`},
		{`"a"+`, `"a"+`},
		{`x = "a" + \y"`, `x = "a" + \y"`},
		{`"a" + \"b"`, `"ab"`},
		{`\\"a" + "b"`, `\\"ab"`},
	} {
		if want := string(joinConcatRegexp([]byte(tc.in))); want != tc.want {
			t.Fatalf("the table is wrong: %q: the regexp gives %q", tc.in, want)
		}
		if got := string(joinConcat([]byte(tc.in))); got != tc.want {
			t.Errorf("joinConcat(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzJoinConcat(f *testing.F) {
	for _, s := range []string{`"a" + "b"`, `'+'+'`, `\"a\"+\'b\'`, `"a" +	 "b" + 'c' + 'd'`, "\"a\" +\n\"b\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := joinConcat(b), joinConcatRegexp(b); !bytes.Equal(got, want) {
			t.Fatalf("joinConcat(%q) = %q, the regexp gives %q", b, got, want)
		}
	})
}
