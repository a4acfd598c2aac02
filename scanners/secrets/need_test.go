package secrets

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestNeeds(t *testing.T) {
	for _, c := range []struct {
		pattern string
		want    []need // nil: cannot tell
	}{
		{`hf_[A-Za-z0-9]{34}`, []need{{lit: "hf_"}}},
		{`(?i)\b(hf_(?i:[a-z]{34}))`, []need{{lit: "hf_", fold: true}}},
		{`SK[0-9a-fA-F]{32}`, []need{{lit: "SK"}}},
		{`(?:ghp|gho)_[A-Za-z0-9]{36}`, []need{{lit: "gh"}}},           // the parser factors the common prefix
		{`(?:xoxb|ABCD)-[0-9]+`, []need{{lit: "xoxb"}, {lit: "ABCD"}}}, // an alternation: one of its branches'
		{`(?:xoxb|[a-z]+)-[0-9]+`, []need{{lit: "-"}}},                 // a branch without: the concatenation's other part
		{`(?:a|b)?[0-9]+`, nil},                                        // optional
		{`x*y{0,3}`, nil},                                              // repeats that may be empty
		{`(?:key){2,}[0-9]`, []need{{lit: "keykey"}}},                  // a repeat at least twice: the copies in a row
		{`(?i)x{6,}`, []need{{lit: "xxxxxx", fold: true}}},
		{`0{17,}`, []need{{lit: "0"}}},                                                                   // longer than maxRepeatNeed: one copy
		{`(?:ab|cd){3}`, []need{{lit: "ab"}, {lit: "cd"}}},                                               // not one literal: one copy of either
		{`(?i)straße`, nil},                                                                              // not ASCII
		{`(?i)(?:access|secret)_?key`, []need{{lit: "access", fold: true}, {lit: "secret", fold: true}}}, // the longest shortest literal
		{`[`, nil}, // not a regexp
	} {
		got, ok := needs(c.pattern)
		if ok != (c.want != nil) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("needs(%q) = %v, %v; want %v", c.pattern, got, ok, c.want)
		}
	}
}

func TestPresent(t *testing.T) {
	ns := []need{{lit: "SK"}, {lit: "token", fold: true}}
	for _, c := range []struct {
		text string
		want bool
	}{
		{"SK0123", true},
		{"sk0123", false}, // as written
		{"TOKEN=1", true}, // either case
		{"nothing here", false},
		{"to\u212aen", true}, // the Kelvin sign folds to k: (?i)token matches it
	} {
		if got := present(ns, c.text, strings.ToLower(c.text)); got != c.want {
			t.Errorf("present(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

// FuzzNeeds: text a regexp matches holds one of the literals it needs.
func FuzzNeeds(f *testing.F) {
	f.Add(`(?i)(?:hugging|\bhf_?(?:hub_?|api_?)?token)[^\n]{0,60}?(api_[A-Za-z0-9]{34})`, "HF_TOKEN = api_0123456789012345678901234567890123")
	f.Add(`(?i)to\x{6b}en`, "to\u212aen")
	f.Add(`SK[0-9a-fA-F]{32}`, "SK0123456789abcdef0123456789abcdef")
	f.Add(`(?:ab|cd)+ef`, "cdcdef")
	f.Add(`(?i)(?:x{6,}|\*{6,}|0{16,})`, "XxXxXx")
	f.Fuzz(func(t *testing.T, pattern, text string) {
		re, err := regexp.Compile(pattern)
		if err != nil || len(pattern) > 200 {
			return
		}
		ns, ok := needs(pattern)
		if ok && re.MatchString(text) && !present(ns, text, strings.ToLower(text)) {
			t.Fatalf("%q matches %q, which holds none of %v", pattern, text, ns)
		}
	})
}
