package secrets

import (
	"slices"
	"strings"

	"github.com/zricethezav/gitleaks/v8/config"
)

// translateFew is translateSafely for the few rules that one small input
// wakes (lazy rules): it leaves the rules' stop-word lists out of
// gitleaks' Allowlist.Validate, which builds an Aho-Corasick trie of them —
// for the generic rule's ~1,400 words 10 MB of allocations, most of what a
// one-script process with a finding did (docs/design/sbatch-hook.md) — and
// sets them on the translated allowlists afterwards, lower-cased and
// without duplicates as Validate leaves them. Without the trie,
// Allowlist.ContainsStopWord compares the words one by one: the same
// answer for any secret (TestTranslateFewStopWords).
func translateFew(vc config.ViperConfig) (config.Config, error) {
	// words[id][i] are the stop words of rule id's i-th allowlist, in the
	// order Translate appends them (the deprecated [rules.allowlist]
	// first, then [[rules.allowlists]]).
	words := map[string][][]string{}
	placeholder := map[string][]bool{}
	rules := vc.Rules[:0:0]
	for _, r := range vc.Rules {
		lists := r.Allowlists
		if r.AllowList != nil {
			if len(lists) > 0 {
				rules = append(rules, r) // an error Translate reports
				continue
			}
			lists = append(lists[:0:0], r.AllowList)
		}
		has := false
		for _, a := range lists {
			has = has || a != nil && len(a.StopWords) > 0
		}
		if !has {
			rules = append(rules, r)
			continue
		}
		out := lists[:0:0]
		ws, ph := make([][]string, len(lists)), make([]bool, len(lists))
		for i, a := range lists {
			if a == nil || len(a.StopWords) == 0 {
				out = append(out, a)
				continue
			}
			c := *a
			ws[i], c.StopWords = lowerUnique(a.StopWords), nil
			if len(c.Commits) == 0 && len(c.Paths) == 0 && len(c.Regexes) == 0 {
				// Validate refuses an empty allowlist: a commit stands in,
				// removed again below (commits are only checked when
				// there are some).
				c.Commits, ph[i] = []string{"\x00stop words"}, true
			}
			out = append(out, &c)
		}
		r.AllowList, r.Allowlists = nil, out
		words[r.ID], placeholder[r.ID] = ws, ph
		rules = append(rules, r)
	}
	vc.Rules = rules
	cfg, err := translateSafely(vc)
	if err != nil {
		return cfg, err
	}
	for id, ws := range words {
		r, ok := cfg.Rules[id]
		if !ok || len(r.Allowlists) < len(ws) {
			continue
		}
		for i, w := range ws {
			if w == nil {
				continue
			}
			a := r.Allowlists[i]
			a.StopWords = w
			if placeholder[id][i] {
				a.Commits = nil
			}
		}
	}
	return cfg, nil
}

// lowerUnique lower-cases words and drops duplicates, as
// Allowlist.Validate does (its order is a map's; this one is sorted).
func lowerUnique(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = strings.ToLower(w)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
