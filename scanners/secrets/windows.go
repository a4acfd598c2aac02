package secrets

import (
	"slices"
	"sort"
	"strings"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/zricethezav/gitleaks/v8/config"
)

// Keyword windows.
//
// gitleaks runs a rule's regexp over the whole fragment it is handed when
// one of the rule's keywords occurs anywhere in it (its Aho-Corasick
// prefilter), so one "key" in 16 KiB of code costs the generic rule's
// regexp — and every other rule keyed on "key" — over all 16 KiB: in the
// profile of bench/secrets.sh's text corpus, Go's regexp engine was two
// thirds of the check's CPU. A rule's match holds its keyword or sits next
// to it (the keyword is the literal its regexp requires, or a word beside
// the assignment), so the fragment is cut into windows: the lines that
// hold a keyword of any rule, with windowContext lines either side,
// merged. A fragment without a keyword is not handed to gitleaks at all
// (no rule would run). Left whole: a fragment where a segment may decode
// (decoded text can hold keywords the raw text does not), one holding a
// PEM block (a key spans many lines), one with the Unicode letters whose
// lower case is ASCII (gitleaks lowers with strings.ToLower), and one whose
// windows cover most of it. TestWindowsSame compares the findings with and
// without windows on every rule's cases, gitleaks' own, code and configs.

// windowContext is how many lines either side of a keyword's line a window
// keeps: a generic match may run over a line break (key =\n 'value'), a
// .netrc entry over three lines.
const windowContext = 2

// windower finds the keyword windows of a fragment.
type windower struct {
	trie *ahocorasick.Trie
	// paths are the rules that judge a file by its path alone (pkcs12-file):
	// gitleaks reports them once per fragment, so a file they match is
	// handed over in whole fragments.
	paths []config.Rule
}

// wholeFile reports whether a path-only rule matches path.
func (w *windower) wholeFile(path string) bool {
	for _, r := range w.paths {
		if r.Path.MatchString(path) {
			return true
		}
	}
	return false
}

// newWindower returns the windower of a rule set, or nil when a rule has
// no keyword (gitleaks runs it on every fragment, so every byte must be
// handed over).
func newWindower(rs *ruleSet) *windower {
	var kws []string
	var paths []config.Rule
	for _, r := range rs.cfg.Rules {
		if r.Regex == nil && r.Path != nil {
			paths = append(paths, r)
			continue
		}
		if len(r.Keywords) == 0 {
			return nil
		}
		for _, k := range r.Keywords {
			kws = append(kws, strings.ToLower(k))
		}
	}
	if len(kws) == 0 {
		return nil
	}
	sort.Strings(kws)
	return &windower{trie: ahocorasick.NewTrieBuilder().AddStrings(slices.Compact(kws)).Build(), paths: paths}
}

// span is a window: raw[start:end], whose first line is line lines after
// the fragment's first.
type span struct {
	start, end, line int
}

// windows returns the windows of raw, and whole when raw must be handed
// over as it is. No windows and whole false: nothing in raw can match.
func (w *windower) windows(raw string) (out []span, whole bool) {
	if strings.Contains(raw, "-----BEGIN") || strings.Contains(raw, "\u212a") || strings.Contains(raw, "\u0130") {
		return nil, true
	}
	lower := asciiLower(raw)
	var ivs [][2]int // line-aligned byte ranges around each hit
	w.trie.Walk(lower, func(end, n, _ int64) bool {
		pos := int(end - n + 1)
		pos = max(0, min(pos, len(raw)-1))
		if len(ivs) > 0 && pos < ivs[len(ivs)-1][1] {
			return true // inside the last window
		}
		s := pos
		for k := 0; k <= windowContext; k++ {
			i := strings.LastIndexByte(raw[:s], '\n')
			if i < 0 {
				s = -1
				break
			}
			s = i
		}
		start := s + 1
		e := pos
		for k := 0; k <= windowContext; k++ {
			i := strings.IndexByte(raw[e:], '\n')
			if i < 0 {
				e = len(raw)
				break
			}
			e += i + 1
		}
		if len(ivs) > 0 && start <= ivs[len(ivs)-1][1] {
			ivs[len(ivs)-1][1] = max(ivs[len(ivs)-1][1], e)
		} else {
			ivs = append(ivs, [2]int{start, e})
		}
		return true
	})
	covered := 0
	for _, iv := range ivs {
		covered += iv[1] - iv[0]
	}
	if covered*10 >= len(raw)*6 {
		return nil, true
	}
	line, at := 0, 0
	for _, iv := range ivs {
		line += strings.Count(raw[at:iv[0]], "\n")
		at = iv[0]
		out = append(out, span{start: iv[0], end: iv[1], line: line})
	}
	return out, false
}

// asciiLower lower-cases the ASCII letters of s, keeping every offset.
func asciiLower(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}
