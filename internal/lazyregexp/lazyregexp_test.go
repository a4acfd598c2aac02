package lazyregexp

import (
	"regexp"
	"testing"
)

// TestLazy: a Regexp answers as the regexp it stands for, compiled once.
func TestLazy(t *testing.T) {
	r := &Regexp{str: `(?i)\b(tok)en=(\w+)`} // as New outside a test binary
	if r.rx != nil {
		t.Fatal("compiled before use")
	}
	want := regexp.MustCompile(`(?i)\b(tok)en=(\w+)`)
	for _, s := range []string{"TOKEN=abc x token=d", "none"} {
		if r.MatchString(s) != want.MatchString(s) || len(r.FindAllStringSubmatch(s, -1)) != len(want.FindAllStringSubmatch(s, -1)) ||
			r.ReplaceAllString(s, "$2") != want.ReplaceAllString(s, "$2") {
			t.Errorf("%q: answers differ", s)
		}
	}
	first := r.Regexp()
	if first != r.Regexp() || r.String() != want.String() || r.NumSubexp() != 2 {
		t.Error("compiled more than once, or another expression")
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic in a test binary")
		}
	}()
	New(`(`)
}
