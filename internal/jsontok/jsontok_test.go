package jsontok

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// v1 is the oracle: encoding/json's Decoder.Token, written as Next's tokens.
func v1(data []byte, skip func(depth int, k Kind) bool) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []string
	depth := 0
	// value reports whether the next token starts a value (not a key or a
	// closing delimiter) — tracked as the Decoder does.
	type frame struct{ obj, wantKey bool }
	var stack []frame
	done := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	skipping, skipDepth := false, 0
	for {
		t, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return append(out, "EOF")
			}
			return append(out, "error")
		}
		k, s := v1Kind(t)
		isKey := len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].wantKey && k == '"'
		closing := k == '}' || k == ']'
		if !skipping && !isKey && !closing && skip != nil && skip(depth, k) {
			if k == '{' || k == '[' {
				skipping, skipDepth = true, depth
			} else {
				out = append(out, fmt.Sprintf("skip@%d", dec.InputOffset()))
			}
		} else if !skipping {
			out = append(out, fmt.Sprintf("%c %q @%d", k, s, dec.InputOffset()))
		}
		switch {
		case k == '{' || k == '[':
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].wantKey = false
			}
			stack = append(stack, frame{obj: k == '{', wantKey: k == '{'})
			depth++
		case closing:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			depth--
			done()
			if skipping && depth == skipDepth {
				skipping = false
				out = append(out, fmt.Sprintf("skip@%d", dec.InputOffset()))
			}
		case isKey:
			stack[len(stack)-1].wantKey = false
		default:
			done()
		}
	}
}

func v1Kind(t json.Token) (Kind, string) {
	switch v := t.(type) {
	case json.Delim:
		return Kind(v), ""
	case string:
		return '"', v
	case json.Number:
		return '0', string(v)
	case bool:
		if v {
			return 't', "true"
		}
		return 'f', "false"
	case nil:
		return 'n', "null"
	}
	panic(fmt.Sprintf("token %T", t))
}

// ours is the same walk over Next and Skip.
func ours(data []byte, skip func(depth int, k Kind) bool) []string {
	d := New(data)
	var out []string
	type frame struct{ obj, wantKey bool }
	var stack []frame
	depth := 0
	for {
		atValue := !(len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].wantKey)
		if k := d.Peek(); atValue && k != 0 && k != '}' && k != ']' && skip != nil && skip(depth, k) {
			if err := d.Skip(); err != nil {
				if errors.Is(err, io.EOF) {
					return append(out, "EOF")
				}
				return append(out, "error")
			}
			out = append(out, fmt.Sprintf("skip@%d", d.Offset()))
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].wantKey = true
			}
			continue
		}
		t, err := d.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return append(out, "EOF")
			}
			return append(out, "error")
		}
		out = append(out, fmt.Sprintf("%c %q @%d", t.Kind, t.Str, d.Offset()))
		switch t.Kind {
		case '{', '[':
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].wantKey = false
			}
			stack = append(stack, frame{obj: t.Kind == '{', wantKey: t.Kind == '{'})
			depth++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			depth--
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].wantKey = true
			}
		default:
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].wantKey = !stack[n-1].wantKey
			}
		}
	}
}

// policies are the skips compared: none, every string value, every
// container below the top, everything at depth 2.
var policies = []struct {
	name string
	skip func(depth int, k Kind) bool
}{
	{"none", nil},
	{"strings", func(_ int, k Kind) bool { return k == '"' }},
	{"containers", func(d int, k Kind) bool { return d >= 1 && (k == '{' || k == '[') }},
	{"depth 2", func(d int, _ Kind) bool { return d == 2 }},
}

func same(t *testing.T, data []byte) {
	t.Helper()
	for _, p := range policies {
		want, got := v1(data, p.skip), ours(data, p.skip)
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Fatalf("%s, %q:\nencoding/json:\n%s\njsontok:\n%s", p.name, data, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
}

func TestSameAsEncodingJSON(t *testing.T) {
	for _, s := range []string{
		``, `  `, `1`, `12 `, `"x"`, `[]`, `{}`, `[1] [2]`, `{"a":1,"a":2}`,
		`{"cells":[{"cell_type":"code","source":["import os\n","print(1)"],"outputs":[{"data":{"image/png":"iVBOR","text/plain":["x"]}}]}],"metadata":{"k":[1,2.5e3,-0,true,false,null]}}`,
		"[\"a\xffb\"]", `["\ud800x"]`, `["\ud800\udc00"]`, "[\"\xed\xa0\x80\"]", `["\u00e9\n\t\"\\\/"]`,
		`[1,]`, `{"a" 1}`, "[\"\x01\"]", `[1e999]`, `[-0]`, `[01]`, `[.5]`, `[1.]`, `[tru]`, `[nul`, `{"a":}`, `{,}`, `[,1]`, `{"a":1 "b":2}`,
		`["a"`, `["a`, `{"a":`, `{"a"`, `{"a":1,`, `[1,`, `[tru`, `[1`, `[12`, `{"a":[`, `[[[[`, `{"a":{"b":[1,{"c":"d"`,
		`["\x"]`, `["\u12"]`, `["\u12`, `["\`, "[1 \n, 2]", "\ufeff[1]", `[1]]`, `}`, `]`, `:`, `,`, `[1:2]`, `{"a",1}`,
	} {
		same(t, []byte(s))
	}
}

func FuzzSameAsEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"cells":[{"cell_type":"code","source":["!pip install x\n"],"outputs":[{"data":{"image/png":"AAAA"}}]}]}`,
		`{"a":[1,2,{"b":null}],"c":"\u00e9"}`, `[1,`, `{"a":`, "[\"a\xffb\"]", `["\ud800x"]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { same(t, data) })
}

// TestDeepNesting pins the one difference: 10,000 levels read as
// encoding/json reads them, 10,001 are an error (it has no limit).
func TestDeepNesting(t *testing.T) {
	d := []byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000))
	if got, want := ours(d, nil), v1(d, nil); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatal("10,000 levels read differently")
	}
	d = []byte(strings.Repeat("[", 10001) + strings.Repeat("]", 10001))
	if got := ours(d, nil); got[len(got)-1] != "error" || len(got) != 10001 {
		t.Fatalf("10,001 levels: %d tokens, then %s", len(got)-1, got[len(got)-1])
	}
}
