package secrets

import (
	"slices"
	"sort"
	"strings"

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
	kw *keywordFinder
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
	return &windower{kw: newKeywordFinder(slices.Compact(kws)), paths: paths}
}

// span is a window: raw[start:end], whose first line is line lines after
// the fragment's first; dec when it holds a segment that may decode.
type span struct {
	start, end, line int
	dec              bool
}

// lineRange returns the line-aligned range of raw from windowContext lines
// before the line of pos to windowContext lines after it.
func lineRange(raw string, pos int) (start, end int) {
	s := pos
	for k := 0; k <= windowContext; k++ {
		i := strings.LastIndexByte(raw[:s], '\n')
		if i < 0 {
			s = -1
			break
		}
		s = i
	}
	e := pos
	for k := 0; k <= windowContext; k++ {
		i := strings.IndexByte(raw[e:], '\n')
		if i < 0 {
			e = len(raw)
			break
		}
		e += i + 1
	}
	return s + 1, e
}

// windows returns the windows of raw, and whole when raw must be handed
// over as it is. No windows and whole false: nothing in raw can match.
// sites are the places of segments that may decode (decodeSites): each
// gets a window too, marked dec — gitleaks' decoding pass reports only
// matches that overlap a decoded segment, so a window without one needs
// no decoding.
func (w *windower) windows(raw string, sites []int) (out []span, whole bool) {
	if strings.Contains(raw, "-----BEGIN") || strings.Contains(raw, "\u212a") || strings.Contains(raw, "\u0130") {
		return nil, true
	}
	type iv struct {
		start, end int
		dec        bool
	}
	var ivs []iv // line-aligned byte ranges around each hit
	// A hit inside the last window adds nothing: the search goes on from
	// the window's end.
	for from := 0; ; {
		pos := w.kw.next(raw, from)
		if pos < 0 {
			break
		}
		start, e := lineRange(raw, pos)
		if len(ivs) > 0 && start <= ivs[len(ivs)-1].end {
			ivs[len(ivs)-1].end = max(ivs[len(ivs)-1].end, e)
		} else {
			ivs = append(ivs, iv{start, e, false})
		}
		from = ivs[len(ivs)-1].end
	}
	if len(sites) > 0 {
		for _, at := range sites {
			start, e := lineRange(raw, at)
			ivs = append(ivs, iv{start, e, true})
		}
		slices.SortFunc(ivs, func(a, b iv) int { return a.start - b.start })
		merged := ivs[:1]
		for _, v := range ivs[1:] {
			last := &merged[len(merged)-1]
			if v.start <= last.end {
				last.end, last.dec = max(last.end, v.end), last.dec || v.dec
				continue
			}
			merged = append(merged, v)
		}
		ivs = merged
	}
	covered := 0
	for _, v := range ivs {
		covered += v.end - v.start
	}
	if covered*10 >= len(raw)*6 {
		return nil, true
	}
	line, at := 0, 0
	for _, v := range ivs {
		line += strings.Count(raw[at:v.start], "\n")
		at = v.start
		out = append(out, span{start: v.start, end: v.end, line: line, dec: v.dec})
	}
	return out, false
}

// keywordFinder finds where the rules' keywords occur in text, ignoring
// the case of ASCII letters, as gitleaks' prefilter does on the lower-cased
// text. Written here rather than taken from an Aho-Corasick library: with
// the ~280 keywords of the built-in rules, whose first bytes are most
// letters, the automata of github.com/BobuSumisu/aho-corasick and
// github.com/coregx/ahocorasick both ran at about 195 MB/s (a transition
// per byte, no prefilter that pays), and the keyword pass was the largest
// cost left on text without secrets. Most positions are ruled out by a
// bit per pair of (lower-cased) bytes that some keyword starts with; the
// rest are checked against the keywords with that start.
// TestKeywordFinder compares it with the trie on every rule's cases.
type keywordFinder struct {
	pairs [1 << 16 / 64]uint64 // bit a<<8|b: a keyword starts with bytes a, b
	slot  [1 << 16]uint16      // by a<<8|b: 1 + the index of its starts in start
	start []keywordStart
	one   [256]int32 // 1 + the index of a one-byte keyword
	ones  bool       // there are some
	n     int        // keywords
}

// keywordStart is what the keywords that start with one pair of bytes hold
// after it.
type keywordStart struct {
	pair  int32     // 1 + the index of the pair itself as a keyword
	third [4]uint64 // bit c: a keyword goes on with byte c
	tails []string  // the keywords' bytes after the pair
	ids   []int32   // their indexes
}

// lowerASCII maps a byte to its ASCII lower case.
var lowerASCII = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// newKeywordFinder returns a finder of kws, which are lower case; a
// keyword's index in kws is its id.
func newKeywordFinder(kws []string) *keywordFinder {
	f := &keywordFinder{n: len(kws)}
	for i, k := range kws {
		id := int32(i)
		switch len(k) {
		case 0:
		case 1:
			f.one[k[0]], f.ones = id+1, true
		default:
			p := uint16(k[0])<<8 | uint16(k[1])
			if f.slot[p] == 0 {
				f.start = append(f.start, keywordStart{})
				f.slot[p] = uint16(len(f.start))
				f.pairs[p>>6] |= 1 << (p & 63)
			}
			st := &f.start[f.slot[p]-1]
			if len(k) == 2 {
				st.pair = id + 1
				continue
			}
			st.third[k[2]>>6] |= 1 << (k[2] & 63)
			st.tails = append(st.tails, k[2:])
			st.ids = append(st.ids, id)
		}
	}
	return f
}

// candidate returns the starts of the keywords with raw[i] and raw[i+1]
// as their first two bytes, or nil.
func (f *keywordFinder) candidate(raw string, i int) *keywordStart {
	if i+1 >= len(raw) {
		return nil
	}
	p := uint16(lowerASCII[raw[i]])<<8 | uint16(lowerASCII[raw[i+1]])
	if f.pairs[p>>6]&(1<<(p&63)) == 0 {
		return nil
	}
	return &f.start[f.slot[p]-1]
}

// next returns where the first keyword at or after from starts in raw,
// or -1.
func (f *keywordFinder) next(raw string, from int) int {
	for i := from; i < len(raw); i++ {
		if f.ones && f.one[lowerASCII[raw[i]]] != 0 {
			return i
		}
		st := f.candidate(raw, i)
		if st == nil {
			continue
		}
		if st.pair != 0 {
			return i
		}
		if i+2 == len(raw) {
			continue
		}
		if c := lowerASCII[raw[i+2]]; st.third[c>>6]&(1<<(c&63)) == 0 {
			continue
		}
		for _, t := range st.tails {
			if hasFoldedPrefix(raw[i+2:], t) {
				return i
			}
		}
	}
	return -1
}

// each calls hit for every place in raw where a keyword starts, with its
// id, in the order of the places.
func (f *keywordFinder) each(raw string, hit func(at int, id int32)) {
	for i := 0; i < len(raw); i++ {
		if f.ones {
			if id := f.one[lowerASCII[raw[i]]]; id != 0 {
				hit(i, id-1)
			}
		}
		st := f.candidate(raw, i)
		if st == nil {
			continue
		}
		if st.pair != 0 {
			hit(i, st.pair-1)
		}
		if i+2 == len(raw) {
			continue
		}
		if c := lowerASCII[raw[i+2]]; st.third[c>>6]&(1<<(c&63)) == 0 {
			continue
		}
		for k, t := range st.tails {
			if hasFoldedPrefix(raw[i+2:], t) {
				hit(i, st.ids[k])
			}
		}
	}
}

// hasFoldedPrefix reports whether s starts with t (lower case) when the
// ASCII letters of s are lower-cased.
func hasFoldedPrefix(s, t string) bool {
	if len(s) < len(t) {
		return false
	}
	for i := 0; i < len(t); i++ {
		if lowerASCII[s[i]] != t[i] {
			return false
		}
	}
	return true
}
