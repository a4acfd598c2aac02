package secrets

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/mlwarden/mlwarden/rules"
)

// TestTranslateFewStopWords: the rules translated without the stop-word
// tries have the same allowlists as gitleaks' Translate makes — the same
// regexes, paths, commits, condition and target, the same stop words — and
// every allowlist answers ContainsStopWord alike, on the built-in rules
// and on a rules file with an allowlist of stop words alone (deprecated
// table, AND condition).
func TestTranslateFewStopWords(t *testing.T) {
	meta, err := rules.LoadSecrets(rules.SecretsFS())
	if err != nil {
		t.Fatal(err)
	}
	user := []byte(`
[[rules]]
id = "user-token"
regex = '''tok_[a-zA-Z]{8}'''
keywords = ["tok_"]
[rules.allowlist]
condition = "AND"
stopwords = ["Sample", "sample", "EXAMPLE"]

[[rules]]
id = "user-mixed"
regex = '''mix_[a-z]{8}'''
[[rules.allowlists]]
regexes = ['''mix_aaaa''']
stopwords = ["dummy"]
[[rules.allowlists]]
paths = ['''\.md$''']
`)
	withWords := 0
	for name, b := range map[string][]byte{"gitleaks default": []byte(config.DefaultConfig), "rules/secrets.toml": meta.TOML, "user": user} {
		read := func() config.ViperConfig {
			vc, _, err := readBuiltin(b)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			//lint:ignore SA1019 the deprecated [allowlist] table is what gitleaks' default config uses.
			vc.AllowList, vc.Allowlists = nil, nil
			return vc
		}
		want, err := translateSafely(read())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := translateFew(read())
		if err != nil {
			t.Fatalf("%s: translateFew: %v", name, err)
		}
		if len(got.Rules) != len(want.Rules) {
			t.Fatalf("%s: %d rules, want %d", name, len(got.Rules), len(want.Rules))
		}
		for id, w := range want.Rules {
			g := got.Rules[id]
			if len(g.Allowlists) != len(w.Allowlists) {
				t.Errorf("%s %s: %d allowlists, want %d", name, id, len(g.Allowlists), len(w.Allowlists))
				continue
			}
			for i, wa := range w.Allowlists {
				ga := g.Allowlists[i]
				if ga.Description != wa.Description || ga.MatchCondition != wa.MatchCondition || ga.RegexTarget != wa.RegexTarget ||
					!slices.Equal(sorted(ga.Commits), sorted(wa.Commits)) || !slices.Equal(patterns(ga.Paths), patterns(wa.Paths)) ||
					!slices.Equal(patterns(ga.Regexes), patterns(wa.Regexes)) {
					t.Errorf("%s %s: allowlist %d differs:\n got %+v\nwant %+v", name, id, i, ga, wa)
				}
				if !slices.Equal(sorted(ga.StopWords), sorted(wa.StopWords)) {
					t.Errorf("%s %s: allowlist %d: %d stop words, want %d", name, id, i, len(ga.StopWords), len(wa.StopWords))
				}
				if len(wa.StopWords) > 0 {
					withWords++
				}
				probes := []string{"", "nothing-here-0", "Zx9Qw7Lp3Rt5"}
				for _, s := range wa.StopWords {
					probes = append(probes, s, "AB"+strings.ToUpper(s)+"12", s[:len(s)-1])
				}
				for _, p := range probes {
					gs, _ := ga.ContainsStopWord(p)
					ws, _ := wa.ContainsStopWord(p)
					if gs != ws {
						t.Errorf("%s %s: allowlist %d: ContainsStopWord(%q) = %v, want %v", name, id, i, p, gs, ws)
					}
				}
			}
		}
	}
	if withWords < 3 {
		t.Errorf("only %d allowlists with stop words: the test does not exercise them", withWords)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func patterns(rs []*regexp.Regexp) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}
