package pins

import (
	"strings"
	"testing"
)

// pyStringAgrees checks that pyString's fast path reads the literal at the
// start of s as pyStringDecode does, under each prefix.
func pyStringAgrees(t *testing.T, s string) {
	t.Helper()
	if s == "" || s[0] != '"' && s[0] != '\'' {
		return
	}
	for _, prefix := range []string{"", "r", "f", "rb", "fr", "u"} {
		gt, gn, gl := pyString(s, prefix)
		wt, wn, wl := pyStringDecode(s, prefix)
		if gt != wt || gn != wn || gl != wl {
			t.Fatalf("pyString(%q, %q) = %+v, %d, %d; byte by byte %+v, %d, %d", s, prefix, gt, gn, gl, wt, wn, wl)
		}
	}
}

func TestPyStringFastPath(t *testing.T) {
	for _, s := range []string{
		`'a'`, `"a" + b`, `''`, `""""""`, `'''a'b''c'''`, `"""x""y"""z`, `'unterminated`, `"`, `'''`, `''''`,
		"'a\nb'", "'''a\nb\n'''", "'''a\nb", "\"x\\\ny\"", `'a\'b'`, `"\\"`, `'end\`, `'{x}'`, `"""{a}\n"""`,
		`'''a\''''`, "'a\r\n'", `"é漢"`, `'''''''`, `"a""b"`,
	} {
		pyStringAgrees(t, s)
	}
}

func FuzzPyString(f *testing.F) {
	for _, s := range []string{`'a'`, `"""x\ny"""`, `'a\'b'`, "'a\nb'", `'''a`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pyStringAgrees(t, s)
		pyStringAgrees(t, "'"+s)
		pyStringAgrees(t, `"""`+s)
	})
}

func TestCalleeIs(t *testing.T) {
	for _, c := range []struct {
		callee, name string
		want         bool
	}{
		{"from_pretrained", "from_pretrained", true},
		{"AutoModel.from_pretrained", "from_pretrained", true},
		{"a.b.from_pretrained", "from_pretrained", true},
		{"xfrom_pretrained", "from_pretrained", false},
		{"from_pretrained.x", "from_pretrained", false},
		{".from_pretrained", "from_pretrained", true},
		{"pretrained", "from_pretrained", false},
		{"", "load", false},
	} {
		if got, want := calleeIs(c.callee, c.name), c.callee == c.name || strings.HasSuffix(c.callee, "."+c.name); got != c.want || got != want {
			t.Errorf("calleeIs(%q, %q) = %v, want %v", c.callee, c.name, got, c.want)
		}
	}
}

// TestPyTokenizeReused: a token slice handed back dirty tokenizes as a
// fresh one does.
func TestPyTokenizeReused(t *testing.T) {
	a := []byte("x = 'a'\nAutoModel.from_pretrained(x, trust_remote_code=True)\n")
	b := []byte("import os\nos.system(\"pip install torch\")  # c\n")
	dirty, _ := pyTokenizeInto(nil, a)
	got, trc := pyTokenizeInto(dirty, b)
	want := pyTokenize(b)
	if len(got) != len(want) || trc {
		t.Fatalf("reused: %d tokens (trc %v), fresh %d", len(got), trc, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("token %d: %+v, fresh %+v", i, got[i], want[i])
		}
	}
	if _, trc := pyTokenizeInto(nil, a); !trc {
		t.Fatal("trust_remote_code not noted")
	}
	if _, trc := pyTokenizeInto(nil, []byte("s = 'trust_remote_code'\n# trust_remote_code\n")); trc {
		t.Fatal("trust_remote_code noted in a string or comment")
	}
}
