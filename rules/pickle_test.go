package rules

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestPickleBuiltIn: the built-in table loads, and every entry of every
// tier says why it is there.
func TestPickleBuiltIn(t *testing.T) {
	r, err := LoadPickle(PickleFS())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tier := range [][]PickleEntry{r.Dangerous, r.Safe, r.Library} {
		for _, e := range tier {
			n++
			if strings.TrimSpace(e.Why) == "" {
				t.Errorf("%s: no why", e.Module)
			}
		}
	}
	if len(r.Safe) == 0 || len(r.Library) == 0 || n < 200 {
		t.Errorf("tiers look empty: %d entries", n)
	}
}

func TestPickleValidation(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"ok", "dangerous:\n  - {module: os, why: runs commands}\nsafe:\n  - {module: collections, names: [OrderedDict], why: a dict}\n", ""},
		{"dangerous without why", "dangerous:\n  - {module: os}\n", "dangerous entry os has no why"},
		{"safe without why", "dangerous:\n  - {module: os, why: x}\nsafe:\n  - {module: collections, names: [OrderedDict]}\n", "safe entry collections has no why"},
		{"library without why", "dangerous:\n  - {module: os, why: x}\nlibrary:\n  - {module: sklearn, why: \"  \"}\n", "library entry sklearn has no why"},
		{"no module", "dangerous:\n  - {names: [x], why: y}\n", "has no module"},
		{"bad severity", "dangerous:\n  - {module: os, severity: huge, why: y}\n", "unknown severity"},
		{"unknown field", "dangerous:\n  - {module: os, why: y, reason: z}\n", "reason"},
		{"no dangerous", "safe: []\n", "no dangerous globals"},
	}
	for _, c := range cases {
		_, err := LoadPickle(fstest.MapFS{PickleFile: {Data: []byte(c.yaml)}})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}
