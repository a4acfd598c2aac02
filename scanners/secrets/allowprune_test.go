package secrets

import (
	"strings"
	"testing"
)

// TestPrunedAllowlists: a global allowlist keeps the patterns that may
// match the fragment's path or text, and an AND allowlist that loses every
// pattern of a kind is left out, as is one left with nothing.
func TestPrunedAllowlists(t *testing.T) {
	vc, _, err := readBuiltin([]byte(`
[[allowlists]]
description = "or"
paths = ['''(?:^|/)node_modules/''', '''\.lock$''']
regexes = ['''^example''', '''(?i)placeholder''', '''^[a-z]+$''']

[[allowlists]]
description = "and: a path and a value"
condition = "AND"
paths = ['''(?:^|/)vendor/''']
regexes = ['''(?i)test''']

[[allowlists]]
description = "paths only"
paths = ['''\.min\.js$''']

[[allowlists]]
description = "stop words stay"
paths = ['''\.png$''']
stopwords = ["abcdefgh"]
`))
	if err != nil {
		t.Fatal(err)
	}
	type kept struct{ desc, paths, regexes string }
	show := func(target allowTarget) []kept {
		out, _ := prunedAllowlists(vc, target, map[string][]need{})
		var ks []kept
		for _, a := range out.Allowlists {
			ks = append(ks, kept{a.Description, strings.Join(a.Paths, " "), strings.Join(a.Regexes, " ")})
		}
		return ks
	}
	target := func(path, raw string) allowTarget {
		return allowTarget{path: path, text: raw, lower: strings.ToLower(raw)}
	}
	for _, c := range []struct {
		t    allowTarget
		want []kept
	}{
		{target("job script", "HF_TOKEN=hf_abc"), []kept{
			{"or", "", `^[a-z]+$`}, // a pattern without needed literals always stays
			{"stop words stay", "", ""},
		}},
		{target("web/node_modules/x.js", "key = example PLACEHOLDER"), []kept{
			{"or", `(?:^|/)node_modules/`, `^example (?i)placeholder ^[a-z]+$`},
			{"stop words stay", "", ""},
		}},
		{target("vendor/lib.go", "TEST_KEY=1"), []kept{
			{"or", "", `^[a-z]+$`},
			{"and: a path and a value", `(?:^|/)vendor/`, `(?i)test`},
			{"stop words stay", "", ""},
		}},
		{target("vendor/lib.go", "KEY=1"), []kept{ // the AND list's value pattern cannot match: it can allow nothing
			{"or", "", `^[a-z]+$`},
			{"stop words stay", "", ""},
		}},
		{target("site/app.min.js", "x"), []kept{
			{"or", "", `^[a-z]+$`},
			{"paths only", `\.min\.js$`, ""},
			{"stop words stay", "", ""},
		}},
	} {
		got := show(c.t)
		if len(got) != len(c.want) {
			t.Errorf("%s %q: kept %+v, want %+v", c.t.path, c.t.text, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s %q: kept %+v, want %+v", c.t.path, c.t.text, got, c.want)
				break
			}
		}
	}
	// Equal keys for what keeps the same patterns, different otherwise.
	_, a := prunedAllowlists(vc, target("a/node_modules/b", "x"), nil)
	_, b := prunedAllowlists(vc, target("c/node_modules/d", "y"), nil)
	_, c := prunedAllowlists(vc, target("job script", "x"), nil)
	if a != b || a == c {
		t.Errorf("keys %q, %q, %q", a, b, c)
	}
}
