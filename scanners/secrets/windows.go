package secrets

import (
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/mlwarden/mlwarden/internal/literal"
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
// merged. A segment that may decode gets a window too (decoded text can
// hold keywords the raw text does not), and only such windows go to the
// decoding detector. A fragment without a keyword or such a segment is not
// handed over at all (no rule would run). Left whole: a fragment holding a
// PEM block (a key spans many lines), one with the Unicode letters whose
// lower case is ASCII (gitleaks lowers with strings.ToLower), one where the
// decode gate gives up, one where a rule whose matches span blocks of lines
// can run (spansBlock: a Kubernetes Secret, curl -u lines below curl), and
// one whose windows cover most of it.
// TestWindowsSame compares the findings with and without windows on every
// rule's cases, code with keywords and with encoded segments, and the
// fixtures.

// windowContext is how many lines either side of a keyword's line a window
// keeps: a generic match may run over a line break (key =\n 'value'), a
// .netrc entry over three lines.
const windowContext = 2

// windower finds the keyword windows of a fragment.
type windower struct {
	kw *literal.Finder
	// pathGates are the path patterns of the rules that judge a file by
	// its path alone (pkcs12-file), behind the literals they need: gitleaks
	// reports them once per fragment, so a file they match is handed over
	// in whole fragments.
	pathGates []pathGate
	// blocks are the rules whose matches span blocks of lines (see
	// spansBlock): a fragment where one of them can run goes whole.
	blocks []config.Rule

	kws       []string // kw's literals
	mu        sync.Mutex
	blockKeys map[string]*literal.Finder // by the blocks a path lets run

	// For a plain detector that finds every literal of the rules in one
	// pass (prefixedDetector.find), whose hits then make the windows too:
	// by its literal ids, the window keywords and the keywords of the block
	// rules a path lets run (by the key of blockKeys).
	hitsOf   *prefixedDetector
	kwIDs    []bool
	blockIDs map[string][]bool
}

// spansBlock reports whether re repeats a wide class that holds the line
// break more than a few times — (?s:.){0,200} between a Kubernetes
// Secret's kind and its data, (.*[\r\n]{1,2}){1,5} after curl, a key's
// [\s\S-]{64,}? —, so that its matches run over more lines than a window
// keeps around a keyword.
func spansBlock(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		if sub := re.Sub[0]; wideWithNewline(sub) && (re.Op != syntax.OpRepeat || re.Max < 0 || re.Max > windowContext) {
			return true
		}
	}
	return slices.ContainsFunc(re.Sub, spansBlock)
}

// wideWithNewline reports whether re matches any character or a class of
// more than a thousand that holds '\n'.
func wideWithNewline(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar:
		return true
	case syntax.OpCharClass:
		n, nl := 0, false
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1] - re.Rune[i] + 1)
			nl = nl || re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1]
		}
		return nl && n > 1000
	case syntax.OpConcat, syntax.OpCapture, syntax.OpAlternate:
		return slices.ContainsFunc(re.Sub, wideWithNewline)
	}
	return false
}

// blockFinder returns a finder of the keywords of the block rules that run
// on path, or nil when none does.
func (w *windower) blockFinder(path string) *literal.Finder {
	key, kws := w.blockKeywords(path)
	if key == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.blockKeys[key]
	if f == nil {
		f = literal.New(kws)
		w.blockKeys[key] = f
	}
	return f
}

// blockKeywords returns the keywords of the block rules that run on path,
// and a key of those rules ("" when none does).
func (w *windower) blockKeywords(path string) (key string, kws []string) {
	var ids []string
	for _, r := range w.blocks {
		if r.Path == nil || r.Path.MatchString(path) {
			ids = append(ids, r.RuleID)
			for _, k := range r.Keywords {
				kws = append(kws, strings.ToLower(k))
			}
		}
	}
	if len(ids) == 0 {
		return "", nil
	}
	return strings.Join(ids, "\x00"), kws
}

// keywordIDs returns, by literal id of d, which of d's literals are window
// keywords, or nil when some keyword is not among them (then the windows
// come from the windower's own pass).
func (w *windower) keywordIDs(d *prefixedDetector) []bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hitsOf == d {
		return w.kwIDs
	}
	ids, ok := d.idsOf(w.kws)
	if !ok {
		ids = nil
	}
	w.hitsOf, w.kwIDs, w.blockIDs = d, ids, map[string][]bool{}
	return ids
}

// blockKeywordIDs is blockFinder for the hits of d (after keywordIDs
// returned non-nil): by d's literal id, the keywords of the block rules
// that run on path; nil when none does.
func (w *windower) blockKeywordIDs(path string, d *prefixedDetector) []bool {
	key, kws := w.blockKeywords(path)
	if key == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ids, ok := w.blockIDs[key]
	if !ok {
		ids, _ = d.idsOf(kws) // keywords, so all among d's literals
		w.blockIDs[key] = ids
	}
	return ids
}

// nextKeyword returns where the first window keyword at or after from
// starts among hits (d's, in the order of places), for from that never
// goes back: what the windower's own pass (kw.Next) returns.
func nextKeyword(hits []litHit, kw []bool) func(from int) int {
	i := 0
	return func(from int) int {
		for ; i < len(hits); i++ {
			if h := hits[i]; int(h.at) >= from && kw[h.id] {
				return int(h.at)
			}
		}
		return -1
	}
}

// anyHit reports whether a hit is one of ids.
func anyHit(hits []litHit, ids []bool) bool {
	return slices.ContainsFunc(hits, func(h litHit) bool { return ids[h.id] })
}

// wholeFile reports whether a path-only rule matches path.
func (w *windower) wholeFile(path string) bool {
	var lower string
	for _, g := range w.pathGates {
		if g.matches(path, &lower) {
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
	var paths, blocks []config.Rule
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
		if re, err := syntax.Parse(r.Regex.String(), syntax.Perl); err != nil || spansBlock(re) {
			blocks = append(blocks, r)
		}
	}
	if len(kws) == 0 {
		return nil
	}
	sort.Strings(kws)
	kws = slices.Compact(kws)
	w := &windower{kw: literal.New(kws), kws: kws, blocks: blocks, blockKeys: map[string]*literal.Finder{}}
	for _, r := range paths {
		w.pathGates = append(w.pathGates, newPathGate(r.Path))
	}
	return w
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
	return w.windowsBy(raw, sites, func(from int) int { return w.kw.Next(raw, from) })
}

// windowsBy is windows with next finding where the first keyword at or
// after from starts in raw.
func (w *windower) windowsBy(raw string, sites []int, next func(from int) int) (out []span, whole bool) {
	if strings.Contains(raw, "-----BEGIN") || strings.Contains(raw, "\u212a") || strings.Contains(raw, "\u0130") {
		return nil, true
	}
	type iv struct {
		start, end int
		dec        bool
	}
	var ivs []iv // line-aligned byte ranges around each hit
	// A hit inside the last window adds nothing: the search goes on from
	// the window's end. The keyword windows are disjoint, so what they
	// cover is the sum of their lengths, which the windows of decode sites
	// only add to: once it is most of raw, raw goes whole, and the rest of
	// the search (most of a fragment dense with keywords) is not needed.
	keywords := 0
	for from := 0; ; {
		pos := next(from)
		if pos < 0 {
			break
		}
		start, e := lineRange(raw, pos)
		if last := len(ivs) - 1; last >= 0 && start <= ivs[last].end {
			if e > ivs[last].end {
				keywords += e - ivs[last].end
				ivs[last].end = e
			}
		} else {
			ivs = append(ivs, iv{start, e, false})
			keywords += e - start
		}
		if keywords*10 >= len(raw)*6 {
			return nil, true
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

// noKeyword is a keyword search that finds none: windowsBy with it makes
// the windows of decode sites alone.
func noKeyword(int) int { return -1 }
