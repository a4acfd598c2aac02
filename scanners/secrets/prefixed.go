package secrets

import (
	"cmp"
	"context"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect/codec"

	"github.com/mlwarden/mlwarden/internal/literal"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/detector"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// Rules with a lazy prefix.
//
// About a hundred of gitleaks' rules — the generic rule among them — start
// with (?i)[\w.-]{0,50}?, so that a match begins up to 50 word bytes before
// its keyword (MY_SERVICE_API_KEY = …). Go's regexp engine has no way to
// skip ahead to the keyword: at every byte it starts a thread, and in a run
// of word bytes up to fifty of them are alive at once. Profiled on the
// issue's ML tree (code, notebooks and logs dense with "key", "token" and
// "test_"), the generic rule ran at about 1.4 MB/s and it and the two Lob
// rules were seven eighths of the check's time.
//
// The prefix only moves where a match starts, never whether there is one:
// with body the pattern after the prefix, the matches of the whole pattern
// are, one for one, the matches of body, each extended backwards over the
// [\w.-] bytes before it (at most 50, and not into the previous match).
// Proof sketch: a match of the whole pattern from p needs body to match at
// some q in p..p+50 with only [\w.-] bytes between; the leftmost such p
// belongs to the leftmost q (a later q's run starts no earlier), and there
// the lazy prefix stops at the first q where body matches, so the match
// ends where body's match from q ends; the next search starts at that end
// in both. And body can only match where one of the strings its first part
// spells starts, so the keyword finder proposes the positions and body,
// anchored, is tried only there.
//
// gitleaks has no hook to hand a rule its matches (detectRule calls
// FindAllStringIndex itself, twice), so for these rules the plain (not
// decoding) detector does what detectRule does, here: the same keyword
// gate, allowlists, location, secret group, entropy and the generic
// rule's give-way filter (filter), over the matches found this way. Only
// for text that needs no Unicode case folding: (?i) makes the prefix's
// class also match U+017F and U+212A, and gitleaks' keyword gate lowers
// U+0130; a fragment holding any of them goes to gitleaks' own detector.
//
// The same search serves rules whose every match starts with one of a few
// literals (jwt's ey, vault's hvs. and s., aws' AKIA…) that gitleaks'
// keyword gate lets through on most code ("ey" is in every "key"): the
// finder proposes the literals' places and the pattern is tried there
// only, with the rune before it, so that a leading \b sees its context.
// Of the 252 built-in rules, 229 are run this way.
//
// TestPrefixedFindAll compares the matches with the patterns' own,
// TestPrefixedSame the findings with gitleaks' detector on every rule's
// cases, inside code and on the fixtures, FuzzPrefixed on what the fuzzer
// makes; on gitleaks' own 6,770 rule cases (bench/secrets-peers.sh's tree)
// the check's report is the same as before, finding for finding.

// lazyPrefixPattern is how the patterns of the prefixed rules start.
const lazyPrefixPattern = `(?i)[\w.-]{0,50}?`

// prefixedRule is a rule run by the plain detector itself.
type prefixedRule struct {
	rule config.Rule
	// at matches at the start of its input: ^(?:pattern) or, for
	// prefixed rules, ^(?i)body; when the pattern starts with an assertion
	// (context), atContext is ^(?s:.)(?:pattern), for input that starts
	// with the rune before the place tried.
	at, atContext *regexp.Regexp
	context       bool
	back          bool                   // extend matches backwards over the lazy prefix
	maxLen        int                    // the longest match in bytes, or -1
	near          *near                  // a necessary condition on the bytes after a start, or nil
	starts        []string               // where a match can start: literals, lower case
	start         func() *literal.Finder // a finder of starts (findAll), built on first use: 136 KiB each
	kws           []int32                // the rule's keywords, as ids in the detector's finder
	// startAt[id] says that the literal id of the detector's finder is
	// one of starts.
	startAt []bool
}

// prefixByte is the prefix's class for ASCII bytes: [\w.-].
var prefixByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	return t
}()

// newPrefixedRule returns r as a rule the plain detector runs, or false
// when no literal leads its matches or the rule needs what only gitleaks'
// detectRule does (a path, required rules, a rule not reported alone,
// keywords outside ASCII).
func newPrefixedRule(r config.Rule) (*prefixedRule, bool) {
	if r.Regex == nil || r.Path != nil || len(r.RequiredRules) > 0 || r.SkipReport {
		return nil, false
	}
	for _, k := range r.Keywords {
		for i := 0; i < len(k); i++ {
			if k[i] >= 0x80 {
				return nil, false
			}
		}
	}
	src := r.Regex.String()
	pr := &prefixedRule{rule: r}
	pattern, wrap := src, "^(?:"+src+")"
	if rest, ok := strings.CutPrefix(src, lazyPrefixPattern); ok && rest != "" && lazyPrefixed(src) {
		pr.back, pattern, wrap = true, "(?i)"+rest, "^(?i:"+rest+")"
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	for len(subs) > 0 && zeroWidth(subs[0].Op) {
		subs, pr.context = subs[1:], true
	}
	if pr.back && pr.context {
		return nil, false
	}
	starts, ok := prefixes(&syntax.Regexp{Op: syntax.OpConcat, Sub: subs}, 64)
	if !ok || len(starts) == 0 || slices.ContainsFunc(starts, func(s string) bool { return len(s) < 2 }) {
		return nil, false
	}
	if pr.at, err = regexp.Compile(wrap); err != nil {
		return nil, false
	}
	if pr.context {
		if pr.atContext, err = regexp.Compile("^(?s:.)(?:" + src + ")"); err != nil {
			return nil, false
		}
	}
	pr.maxLen = maxBytes(re)
	pr.near = nearGate(subs)
	pr.starts, pr.start = starts, sync.OnceValue(func() *literal.Finder { return literal.New(starts) })
	return pr, true
}

// near is a necessary condition for a match at a literal's place q: after
// one of lits (which starts raw[q:], ASCII case folded), at most span
// bytes of class, then a byte of set. The generic rule's operator (=, :, >,
// |, ?, ,) must follow its keyword within 23 bytes of [ \t\w.-]{0,20} then
// [\s'"]{0,3}; most places where "key" or "token" occur in code have none
// (a parenthesis, a comma or a word past 23 bytes comes first), and trying
// the pattern there (unbounded, so in Go's NFA) was half of the fast
// rules' time.
type near struct {
	lits  []string // the literals a match starts with, ASCII lower case
	span  int
	class [256]bool // the bytes the bounded repeats after the literal take
	set   [256]bool // the bytes the part after them starts with
}

func (n *near) ok(raw string, q int) bool {
	for _, l := range n.lits {
		if !foldedPrefix(raw[q:], l) {
			continue
		}
		for j, end := q+len(l), min(len(raw), q+len(l)+n.span+1); j < end; j++ {
			c := raw[j]
			if n.set[c] {
				return true
			}
			if !n.class[c] {
				break
			}
		}
	}
	return false
}

// foldedPrefix reports whether s starts with lit (ASCII lower case) under
// ASCII case folding.
func foldedPrefix(s, lit string) bool {
	if len(s) < len(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if literal.Lower(s[i]) != lit[i] {
			return false
		}
	}
	return true
}

// nearGate derives a near condition from a pattern made of subs: literals
// first (their spellings known), then repeats of one-byte classes with a
// bound (their total bound, and the bytes they take), then a part that
// cannot match empty and whose first byte is one of a few. Nil when the
// pattern has no such shape.
func nearGate(subs []*syntax.Regexp) *near {
	if len(subs) < 2 {
		return nil
	}
	lits, ok := spell(subs[0], 64)
	if !ok || len(lits) == 0 {
		return nil
	}
	g := &near{lits: slices.Compact(slices.Sorted(slices.Values(lits)))}
	i := 1
	for ; i < len(subs); i++ {
		n, ok := oneByteRepeat(subs[i], &g.class)
		if !ok {
			break
		}
		g.span += n
	}
	if i == len(subs) {
		return nil
	}
	if !firstBytes(subs[i], &g.set) {
		return nil
	}
	return g
}

// oneByteRepeat returns the bound of re when it repeats (at most a bound
// of times, possibly none) a class whose every character is one byte in
// the text the fast rules see (ASCII; ſ and K are sent to gitleaks), and
// adds the class's bytes to class.
func oneByteRepeat(re *syntax.Regexp, class *[256]bool) (int, bool) {
	switch re.Op {
	case syntax.OpRepeat, syntax.OpQuest:
		if re.Op == syntax.OpRepeat && re.Max < 0 {
			return 0, false
		}
		max := 1
		if re.Op == syntax.OpRepeat {
			max = re.Max
		}
		sub := re.Sub[0]
		switch {
		case sub.Op == syntax.OpLiteral && len(sub.Rune) == 1 && sub.Rune[0] < 0x80,
			sub.Op == syntax.OpCharClass && oneByteClass(sub):
			return max, firstBytes(sub, class)
		}
	}
	return 0, false
}

// oneByteClass reports whether every character of the class is ASCII or
// one of the letters that send text to gitleaks (ſ, K).
func oneByteClass(re *syntax.Regexp) bool {
	for i := 0; i+1 < len(re.Rune); i += 2 {
		lo, hi := re.Rune[i], re.Rune[i+1]
		if hi < 0x80 {
			continue
		}
		if !(lo == hi && (lo == 0x17f || lo == 0x212a)) {
			return false
		}
	}
	return true
}

// firstBytes adds to set the bytes a match of re can start with, and
// reports whether re cannot match empty and they are all known.
func firstBytes(re *syntax.Regexp, set *[256]bool) bool {
	switch re.Op {
	case syntax.OpLiteral:
		r := re.Rune[0]
		if r >= 0x80 {
			return false
		}
		set[r] = true
		if re.Flags&syntax.FoldCase != 0 {
			set[literal.Lower(byte(r))] = true
			if 'a' <= r && r <= 'z' {
				set[r-'a'+'A'] = true
			}
		}
		return true
	case syntax.OpCharClass:
		if !oneByteClass(re) {
			return false
		}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= min(re.Rune[i+1], 0x7f); r++ {
				set[r] = true
			}
		}
		return true
	case syntax.OpCapture:
		return firstBytes(re.Sub[0], set)
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !firstBytes(sub, set) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		return len(re.Sub) > 0 && firstBytes(re.Sub[0], set)
	case syntax.OpRepeat, syntax.OpPlus:
		if re.Op == syntax.OpPlus || re.Min >= 1 {
			return firstBytes(re.Sub[0], set)
		}
	}
	return false
}

// lazyPrefixed reports whether the prefix of src is the first part of
// every match (not only of a first alternative: a|b after it).
func lazyPrefixed(src string) bool {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) < 2 {
		return false
	}
	p := re.Sub[0]
	return p.Op == syntax.OpRepeat && p.Min == 0 && p.Max == 50 && p.Flags&syntax.NonGreedy != 0
}

func zeroWidth(op syntax.Op) bool {
	switch op {
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginText, syntax.OpBeginLine:
		return true
	}
	return false
}

// prefixes returns strings, ASCII-lower-cased, one of which every match of
// re starts with, when re's first parts are ASCII literals, small classes,
// groups and alternations of such; at most limit of them.
func prefixes(re *syntax.Regexp, limit int) ([]string, bool) {
	if re.Op != syntax.OpConcat {
		if s, ok := spell(re, limit); ok {
			return s, true
		}
	}
	switch re.Op {
	case syntax.OpCapture:
		return prefixes(re.Sub[0], limit)
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s, ok := prefixes(sub, limit-len(out))
			if !ok {
				return nil, false
			}
			out = append(out, s...)
		}
		return compact(out, limit)
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			s, exact := spell(sub, limit)
			if !exact {
				if s, ok := prefixes(sub, limit); ok {
					return cross(out, s, limit)
				}
				return compact(out, limit)
			}
			next, ok := cross(out, s, limit)
			if !ok {
				return compact(out, limit)
			}
			out = next
		}
		return compact(out, limit)
	case syntax.OpRepeat, syntax.OpPlus:
		if re.Op == syntax.OpPlus || re.Min >= 1 {
			return prefixes(re.Sub[0], limit)
		}
	}
	return nil, false
}

func cross(a, b []string, limit int) ([]string, bool) {
	if len(a)*len(b) > limit {
		return nil, false
	}
	var out []string
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return compact(out, limit)
}

func compact(s []string, limit int) ([]string, bool) {
	sort.Strings(s)
	s = slices.Compact(s)
	return s, len(s) <= limit
}

// spell returns the strings re matches, ASCII-lower-cased, when they are
// at most limit and re is made of ASCII literals, small classes,
// concatenations, alternations, groups and optional parts.
func spell(re *syntax.Regexp, limit int) ([]string, bool) {
	lower := func(r rune) (byte, bool) {
		if r >= 0x80 {
			return 0, false
		}
		return literal.Lower(byte(r)), true
	}
	var out []string
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		b := make([]byte, 0, len(re.Rune))
		for _, r := range re.Rune {
			c, ok := lower(r)
			if !ok {
				return nil, false
			}
			b = append(b, c)
		}
		return []string{string(b)}, true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				c, ok := lower(r)
				if !ok || len(out) >= 8 {
					return nil, false
				}
				out = append(out, string([]byte{c}))
			}
		}
	case syntax.OpCapture:
		return spell(re.Sub[0], limit)
	case syntax.OpQuest:
		s, ok := spell(re.Sub[0], limit-1)
		return append(s, ""), ok
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, ok := spell(sub, limit-len(out))
			if !ok {
				return nil, false
			}
			out = append(out, s...)
		}
	case syntax.OpConcat:
		out = []string{""}
		for _, sub := range re.Sub {
			s, ok := spell(sub, limit)
			if !ok {
				return nil, false
			}
			if out, ok = cross(out, s, limit); !ok {
				return nil, false
			}
		}
	default:
		return nil, false
	}
	return compact(out, limit)
}

// maxBytes returns the most bytes a match of re spans, or -1 when it has
// no bound.
func maxBytes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		return len(re.Rune) * utf8.UTFMax
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture:
		return maxBytes(re.Sub[0])
	case syntax.OpQuest:
		return maxBytes(re.Sub[0])
	case syntax.OpRepeat:
		n := maxBytes(re.Sub[0])
		if n < 0 || re.Max < 0 {
			return -1
		}
		return n * re.Max
	case syntax.OpConcat, syntax.OpAlternate:
		t := 0
		for _, sub := range re.Sub {
			n := maxBytes(sub)
			if n < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				t += n
			} else {
				t = max(t, n)
			}
		}
		return t
	}
	return -1
}

// foldsOutsideASCII reports whether raw holds a letter whose case folding
// reaches ASCII (U+017F ſ, U+212A Kelvin) or that gitleaks' lower-casing
// changes in length (U+0130): the text that goes to gitleaks' detector.
func foldsOutsideASCII(raw string) bool {
	return strings.Contains(raw, "\u017f") || strings.Contains(raw, "\u212a") || strings.Contains(raw, "\u0130")
}

// findAll returns what r.rule.Regex.FindAllStringIndex(raw, -1) returns,
// for raw that foldsOutsideASCII rejects.
func (r *prefixedRule) findAll(raw string) [][]int {
	var out [][]int
	for pos, from := 0, 0; ; {
		q := r.start().Next(raw, from)
		if q < 0 {
			return out
		}
		from = q + 1
		if p, e, ok := r.matchAt(raw, q, pos); ok {
			out = append(out, []int{p, e})
			pos, from = e, e
		}
	}
}

// findAllAt is findAll with the places where one of r's starts occurs in
// raw taken from hits (every literal of the detector's finder, in order).
func (r *prefixedRule) findAllAt(raw string, hits []litHit) [][]int {
	var out [][]int
	pos, last := 0, -1
	for _, h := range hits {
		q := int(h.at)
		if q < pos || q == last || !r.startAt[h.id] {
			continue
		}
		last = q
		if p, e, ok := r.matchAt(raw, q, pos); ok {
			out = append(out, []int{p, e})
			pos = e
		}
	}
	return out
}

// matchAt returns the match of r's pattern that its body's match at q
// makes, when the previous match ended at pos.
func (r *prefixedRule) matchAt(raw string, q, pos int) (p, e int, ok bool) {
	if r.near != nil && !r.near.ok(raw, q) {
		return 0, 0, false
	}
	in, at, re := raw[q:], q, r.at // the input tried and where it starts in raw
	if r.context && q > 0 {
		_, w := utf8.DecodeLastRuneInString(raw[:q])
		in, at, re = raw[q-w:], q-w, r.atContext
	}
	if r.maxLen >= 0 {
		// Bounded, so that Go's regexp may use its backtracker; a rune
		// more, so that \b and $ at the end of a match see what follows.
		in = in[:min(len(in), q-at+r.maxLen+utf8.UTFMax)]
	}
	loc := re.FindStringIndex(in)
	if loc == nil || at+loc[1] <= q {
		return 0, 0, false
	}
	p, e = q, at+loc[1]
	if r.back {
		for n := 0; n < 50 && p > pos && prefixByte[raw[p-1]]; n++ {
			p--
		}
	}
	return p, e, true
}

// litHit is a place where a literal of the detector's finder starts.
type litHit struct{ at, id int32 }

// prefixedDetector is the plain detector: gitleaks' over the other rules,
// and the prefixed rules run here.
type prefixedDetector struct {
	rest *engine.Detector // the rules that are not prefixed
	// all is gitleaks' detector over every rule, for git history and text
	// that needs Unicode folding; made on first use (its keyword trie is
	// megabytes that a scan of plain files never needs).
	all   func() *engine.Detector
	rules []*prefixedRule
	// lits are the rules' keywords and starts and rest's keywords; one
	// pass over a fragment finds them all.
	lits     *literal.Finder
	ids      map[string]int32 // the literals' ids
	litLen   []int32          // by literal: its length
	starting []bool           // by literal: some rule starts with it
	restKWs  []int32          // rest's keywords
	// restAlways: a rule of rest runs on every fragment (it has no
	// keyword, or one outside ASCII); restPaths are rest's rules that judge
	// a file by its path alone, without keywords.
	restAlways bool
	restPaths  []config.Rule
	// For the decoding passes (decoding.go): rest's rules that match text,
	// and rest's detector with those passes, made on first use.
	restText     []restRule
	restDecoding func() *engine.Detector
	global       []*config.Allowlist
	path         string // the config file's path: gitleaks scans nothing there

	mu    sync.Mutex
	known map[string]*pathFacts // by FilePath, CommitSHA
	// globalPaths holds the global allowlists' path patterns with the
	// literals they need.
	globalPaths func() pathGates
}

// newPrefixedDetector returns the detector without decoding passes over
// the rules of full. With no prefixed rule it is gitleaks' own.
func newPrefixedDetector(full config.Config) fragmentDetector {
	all := sync.OnceValue(func() *engine.Detector { return keepAllowed(engine.NewDetector(full)) })
	cfg := full
	cfg.Rules, cfg.Keywords, cfg.OrderedRules = map[string]config.Rule{}, map[string]struct{}{}, nil
	cfg.Allowlists = contentAllowlists(full.Allowlists)
	d := &prefixedDetector{all: all, global: full.Allowlists, path: full.Path, known: map[string]*pathFacts{}}
	d.globalPaths = sync.OnceValue(func() pathGates { return newPathGates(full.Allowlists) })
	ids := map[string]int32{}
	var lits []string
	lit := func(k string) int32 {
		k = strings.ToLower(k)
		if id, ok := ids[k]; ok {
			return id
		}
		ids[k] = int32(len(lits))
		lits = append(lits, k)
		return ids[k]
	}
	// A composite rule (rest's) runs the rules it requires over the
	// fragment itself, looking them up in rest's config: they stay there.
	required := map[string]bool{}
	for _, r := range full.Rules {
		for _, q := range r.RequiredRules {
			required[q.RuleID] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(full.Rules)) { // gitleaks runs them in map order
		r := full.Rules[id]
		if p, ok := newPrefixedRule(r); ok && !required[id] {
			for _, k := range r.Keywords {
				p.kws = append(p.kws, lit(k))
			}
			for _, k := range p.starts {
				lit(k)
			}
			d.rules = append(d.rules, p)
			continue
		}
		cfg.Rules[id] = r
		cfg.OrderedRules = append(cfg.OrderedRules, id)
		for _, k := range r.Keywords {
			cfg.Keywords[strings.ToLower(k)] = struct{}{}
			if strings.ToLower(k) != asciiLowered(k) {
				d.restAlways = true
			}
			d.restKWs = append(d.restKWs, lit(k))
		}
		if r.Regex != nil {
			tr := restRule{path: r.Path}
			for _, k := range r.Keywords {
				tr.kws = append(tr.kws, lit(k))
			}
			d.restText = append(d.restText, tr)
		}
		if len(r.Keywords) == 0 {
			if r.Regex == nil && r.Path != nil {
				d.restPaths = append(d.restPaths, r)
			} else {
				d.restAlways = true
			}
		}
	}
	if len(d.rules) == 0 {
		return all()
	}
	d.lits, d.ids = literal.New(lits), ids
	d.litLen = make([]int32, len(lits))
	for i, k := range lits {
		d.litLen[i] = int32(len(k))
	}
	d.starting = make([]bool, len(lits))
	for _, p := range d.rules {
		p.startAt = make([]bool, len(lits))
		for _, k := range p.starts {
			p.startAt[ids[k]], d.starting[ids[k]] = true, true
		}
	}
	d.rest = keepAllowed(engine.NewDetector(cfg))
	d.restDecoding = sync.OnceValue(func() *engine.Detector {
		x := keepAllowed(engine.NewDetector(cfg))
		x.MaxDecodeDepth = decodeDepth
		return x
	})
	return d
}

// DetectContext finds what gitleaks' plain detector over every rule finds.
func (d *prefixedDetector) DetectContext(ctx context.Context, f engine.Fragment) []engine.Finding {
	return d.detect(ctx, f, nil, nil, false)
}

// detectHits is DetectContext for a fragment whose literals are already
// found: hits are what find(f.Raw) returns (within does it for a part of
// a text found whole); pf is facts(f), or nil.
func (d *prefixedDetector) detectHits(ctx context.Context, f engine.Fragment, hits []litHit, pf *pathFacts) []engine.Finding {
	return d.detect(ctx, f, pf, hits, true)
}

// find appends to out every place in raw where one of d's literals starts,
// with its id, in the order of the places: one pass that serves the
// windower (windows.go) and detectHits.
func (d *prefixedDetector) find(raw string, out []litHit) []litHit {
	d.lits.Each(raw, func(at int, id int32) { out = append(out, litHit{int32(at), id}) })
	return out
}

// within returns the hits of find(raw) that lie wholly in raw[start:end],
// at their places there, appended to out: what find(raw[start:end])
// returns.
func (d *prefixedDetector) within(hits []litHit, start, end int, out []litHit) []litHit {
	i, _ := slices.BinarySearchFunc(hits, int32(start), func(h litHit, at int32) int { return cmp.Compare(h.at, at) })
	for _, h := range hits[i:] {
		if int(h.at) >= end {
			break
		}
		if int(h.at)+int(d.litLen[h.id]) <= end {
			out = append(out, litHit{h.at - int32(start), h.id})
		}
	}
	return out
}

// idsOf returns, by literal id, which of d's literals are among lits
// (lower case), and whether all of lits are.
func (d *prefixedDetector) idsOf(lits []string) ([]bool, bool) {
	out := make([]bool, len(d.litLen))
	all := true
	for _, k := range lits {
		id, ok := d.ids[k]
		if !ok {
			all = false
			continue
		}
		out[id] = true
	}
	return out, all
}

func (d *prefixedDetector) detect(ctx context.Context, f engine.Fragment, pf *pathFacts, known []litHit, given bool) []engine.Finding {
	if !d.plainText(f) {
		return d.all().DetectContext(ctx, f)
	}
	if pf == nil {
		pf = d.facts(f)
	}
	if d.scansNothing(f, pf) {
		return nil
	}
	out, found := d.plainFindings(ctx, f, pf, known, given, d.rest)
	if !found {
		return out
	}
	return giveWay(out)
}

// plainText is whether f is text the prefixed rules run on themselves:
// a file's, without the letters whose case folding gitleaks' keyword gate
// and (?i) see differently (foldsOutsideASCII).
func (d *prefixedDetector) plainText(f engine.Fragment) bool {
	return f.CommitInfo == nil && f.WindowsFilePath == "" && !f.InheritedFromFinding && !foldsOutsideASCII(f.Raw)
}

// scansNothing is whether gitleaks scans nothing in f, whose pathFacts
// are pf: its config file, or a file or commit the global allowlist leaves
// out.
func (d *prefixedDetector) scansNothing(f engine.Fragment, pf *pathFacts) bool {
	return f.FilePath != "" && f.FilePath == d.path || pf.skip
}

// plainFindings is the plain pass over f, with rest running the rules
// that are not prefixed: f's literals are found here, or given (known,
// what find(f.Raw) returns). The findings come before gitleaks' give-way
// filter, which found says is needed (a prefixed rule found something:
// rest's findings are filtered). A nil rest leaves those rules out.
func (d *prefixedDetector) plainFindings(ctx context.Context, f engine.Fragment, pf *pathFacts, known []litHit, given bool, rest fragmentDetector) (out []engine.Finding, found bool) {
	seen := make([]bool, len(d.starting))
	var hits []litHit
	hit := func(at int, id int32) {
		seen[id] = true
		if d.starting[id] {
			hits = append(hits, litHit{int32(at), id})
		}
	}
	if given {
		for _, h := range known {
			hit(int(h.at), h.id)
		}
	} else {
		d.lits.Each(f.Raw, hit)
	}
	if rest != nil && (d.restAlways || pf.restPath || slices.ContainsFunc(d.restKWs, func(id int32) bool { return seen[id] })) {
		out = rest.DetectContext(ctx, f)
	}
	n := len(out)
	out = d.ruleFindings(ctx, f, pf, f.Raw, nil, seen, hits, out)
	return out, len(out) > n
}

// ruleFindings appends to out the prefixed rules' findings in raw, the
// text of f (with pathFacts pf) as a pass has it — f.Raw in the plain
// pass, else with segs, the segments that decoding pass decoded — for the
// rules whose keywords seen (by literal id) holds; starts are raw's
// places of literals some rule starts with.
func (d *prefixedDetector) ruleFindings(ctx context.Context, f engine.Fragment, pf *pathFacts, raw string, segs []*codec.EncodedSegment, seen []bool, starts []litHit, out []engine.Finding) []engine.Finding {
	var newlines [][]int
	for i, r := range d.rules {
		if ctx.Err() != nil {
			break
		}
		if len(r.kws) > 0 && !slices.ContainsFunc(r.kws, func(id int32) bool { return seen[id] }) {
			continue
		}
		if pf.ruleAllowed(i) {
			continue
		}
		for _, m := range r.findAllAt(raw, starts) {
			if newlines == nil {
				newlines = detector.Newlines(f.Raw)
			}
			if g, ok := r.finding(f, raw, segs, d.global, newlines, m); ok {
				out = append(out, g)
			}
		}
	}
	return out
}

// pathFacts is what paths decide for one file (and commit): the same for
// each of its fragments and windows, so remembered (facts). Running the
// path patterns for each was a tenth of the check's time (the global
// allowlist's few hundred), and then ≈ 7 % on Debian's Python packages
// (the path-only rules' and the rules' own allowlists').
type pathFacts struct {
	skip     bool   // the global allowlist leaves the file or commit out
	restPath bool   // one of rest's path-only rules matches the file
	allowed  []bool // by rule of d.rules (nil: none): its allowlists leave it out
}

// facts returns f's pathFacts, remembered by file and commit; only
// FilePath and CommitSHA are read.
func (d *prefixedDetector) facts(f engine.Fragment) *pathFacts {
	key := f.FilePath + "\x00" + f.CommitSHA
	d.mu.Lock()
	v, ok := d.known[key]
	d.mu.Unlock()
	if ok {
		return v
	}
	v = &pathFacts{
		skip:     detector.PathOrCommitAllowedBy(f.FilePath, "", f.CommitSHA, d.global, d.globalPaths().allowed(d.global)),
		restPath: slices.ContainsFunc(d.restPaths, func(r config.Rule) bool { return r.Path.MatchString(f.FilePath) }),
	}
	for i, r := range d.rules {
		if len(r.rule.Allowlists) > 0 && detector.PathOrCommitAllowed(f.FilePath, "", f.CommitSHA, r.rule.Allowlists) {
			if v.allowed == nil {
				v.allowed = make([]bool, len(d.rules))
			}
			v.allowed[i] = true
		}
	}
	d.mu.Lock()
	if len(d.known) >= 4096 {
		clear(d.known)
	}
	d.known[key] = v
	d.mu.Unlock()
	return v
}

// contentAllowlists returns the global allowlists as rest's detector
// needs them once facts has found that they leave a file in (rest runs on
// no other): gitleaks checks a fragment's path and commit against every
// allowlist each time (the default's few hundred path patterns as one
// alternation, in Go's NFA: ≈ 2 % of the check on Debian's Python
// packages), and an OR allowlist's paths and commits count only there —
// its findings are judged by its regexes and stop words alone. So those
// go, and an OR allowlist of paths and commits only goes whole; AND
// allowlists stay as they are.
func contentAllowlists(as []*config.Allowlist) []*config.Allowlist {
	var out []*config.Allowlist
	for _, a := range as {
		switch {
		case a == nil || a.MatchCondition == config.AllowlistMatchAnd || len(a.Paths) == 0 && len(a.Commits) == 0:
			out = append(out, a)
		case len(a.Regexes) == 0 && len(a.StopWords) == 0:
			// paths and commits only: facts.skip decides
		default:
			c := &config.Allowlist{Description: a.Description, MatchCondition: a.MatchCondition, RegexTarget: a.RegexTarget, Regexes: a.Regexes, StopWords: a.StopWords}
			if c.Validate() != nil {
				c = a
			}
			out = append(out, c)
		}
	}
	return out
}

// ruleAllowed is whether rule i's allowlists leave out the file (and
// commit) pf is about.
func (pf *pathFacts) ruleAllowed(i int) bool { return pf.allowed != nil && pf.allowed[i] }

// pathGates run an allowlist's path patterns one by one, each a small
// program and most ruled out by their literals, instead of gitleaks' one
// alternation of them all, which Go runs as an NFA over the whole program:
// about 0.1 ms a path for the default config's global allowlist, once per
// file. gitleaks joins the patterns without a group each ("(?:p1|p2|…)"), so
// a flag a pattern sets at its top level ("(?i)…") holds for the patterns
// after it too: each pattern here is compiled with the flags the ones
// before it leave set. TestPathGates compares with gitleaks' PathAllowed.
type pathGates [][]pathGate

type pathGate struct {
	re    *regexp.Regexp
	needs []need
	known bool // needs holds: else the pattern always runs
}

func newPathGates(allowlists []*config.Allowlist) pathGates {
	out := make(pathGates, len(allowlists))
	for i, a := range allowlists {
		if a == nil {
			continue
		}
		flags := ""
		for _, re := range a.Paths {
			src := re.String()
			if flags != "" {
				src = "(?" + flags + ")" + src
			}
			one, err := regexp.Compile(src)
			if err != nil {
				out[i] = nil // cannot tell: gitleaks' own
				break
			}
			ns, ok := needs(src)
			out[i] = append(out[i], pathGate{re: one, needs: ns, known: ok})
			flags = leftFlags(flags, re.String())
		}
	}
	return out
}

// leftFlags is the flags set (of i, m, s, U) after pattern, parsed at the
// top level of a group where flags were set: flag groups "(?i)" at depth 0
// (not in a class, not escaped) change them.
func leftFlags(flags, pattern string) string {
	on := map[byte]bool{}
	for i := 0; i < len(flags); i++ {
		on[flags[i]] = true
	}
	depth, class := 0, false
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\':
			i++
		case class:
			if c == ']' {
				class = false
			}
		case c == '[':
			class = true
			if strings.HasPrefix(pattern[i+1:], "^]") {
				i += 2
			} else if strings.HasPrefix(pattern[i+1:], "]") {
				i++
			}
		case c == '(':
			if depth == 0 && strings.HasPrefix(pattern[i+1:], "?") {
				if k := strings.IndexAny(pattern[i+2:], ":)"); k >= 0 && pattern[i+2+k] == ')' {
					set := true
					for _, f := range []byte(pattern[i+2 : i+2+k]) {
						if f == '-' {
							set = false
						} else {
							on[f] = set
						}
					}
					i += 2 + k
					continue
				}
			}
			depth++
		case c == ')':
			depth--
		}
	}
	var b []byte
	for _, f := range []byte("imsU") {
		if on[f] {
			b = append(b, f)
		}
	}
	return string(b)
}

// allowed is allowlists[i].PathAllowed(p), for the allowlists g was made of.
func (g pathGates) allowed(allowlists []*config.Allowlist) func(i int, p string) bool {
	return func(i int, p string) bool {
		if g[i] == nil || p == "" {
			return allowlists[i].PathAllowed(p)
		}
		var lower string
		for _, x := range g[i] {
			if x.matches(p, &lower) {
				return true
			}
		}
		return false
	}
}

// newPathGate returns the gate of one path pattern.
func newPathGate(re *regexp.Regexp) pathGate {
	ns, ok := needs(re.String())
	return pathGate{re: re, needs: ns, known: ok}
}

// matches is whether x's pattern matches p; lower is p lower-cased, or ""
// until a gate needs it.
func (x pathGate) matches(p string, lower *string) bool {
	if x.known {
		if *lower == "" {
			*lower = strings.ToLower(p)
		}
		if !present(x.needs, p, *lower) {
			return false
		}
	}
	return x.re.MatchString(p)
}

// asciiLowered lower-cases the ASCII letters of s.
func asciiLowered(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = literal.Lower(c)
	}
	return string(b)
}

// finding is detectRule's finding for the match m of r in raw, the text
// of f as a decoding pass has it (f.Raw in the plain pass, where segs is
// empty; else the segments that pass decoded), and whether the allowlists
// and the entropy bound keep it; newlines are f.Raw's. In a decoding pass
// only a match that overlaps a segment decoded in it is new (gitleaks
// reports the others in the passes before).
func (r *prefixedRule) finding(f engine.Fragment, raw string, segs []*codec.EncodedSegment, global []*config.Allowlist, newlines [][]int, m []int) (engine.Finding, bool) {
	secret := strings.Trim(raw[m[0]:m[1]], "\n")
	tags, line := r.rule.Tags, ""
	if len(segs) > 0 {
		over := codec.SegmentsWithDecodedOverlap(segs, m[0], m[1])
		if len(over) == 0 {
			return engine.Finding{}, false
		}
		m = codec.AdjustMatchIndex(over, m)
		tags = slices.Concat(r.rule.Tags, codec.Tags(over)) // gitleaks appends to the rule's own slice
		line = codec.CurrentLine(over, raw)
	} else {
		m = []int{m[0], m[0] + len(secret)}
	}
	loc := detector.Locate(newlines, f.Raw, m)
	if m[1] > loc.EndLineIndex {
		loc.EndLineIndex = m[1]
	}
	g := engine.Finding{
		Commit:      f.CommitSHA,
		RuleID:      r.rule.RuleID,
		Description: r.rule.Description,
		StartLine:   f.StartLine + loc.StartLine,
		EndLine:     f.StartLine + loc.EndLine,
		StartColumn: loc.StartColumn,
		EndColumn:   loc.EndColumn,
		Line:        f.Raw[loc.StartLineIndex:loc.EndLineIndex],
		Match:       secret,
		Secret:      secret,
		File:        f.FilePath,
		SymlinkFile: f.SymlinkFile,
		Tags:        tags,
	}
	if line == "" {
		line = g.Line
	}
	var ok bool
	if g.Secret, ok = detector.SecretOf(r.rule, g.Secret); !ok {
		return g, false
	}
	e := detector.Entropy(g.Secret)
	g.Entropy = float32(e)
	if r.rule.Entropy != 0 && e <= r.rule.Entropy {
		return g, false
	}
	if detector.FindingAllowed(g.Secret, g.Match, line, f.FilePath, "", f.CommitSHA, global) ||
		detector.FindingAllowed(g.Secret, g.Match, line, f.FilePath, "", f.CommitSHA, r.rule.Allowlists) {
		return g, false
	}
	return g, true
}

// giveWay is gitleaks' filter: a generic rule's finding gives way to
// another rule's on the same line whose secret holds its secret.
func giveWay(fs []engine.Finding) []engine.Finding {
	return detector.GiveWay(fs, func(f *engine.Finding) (int, string, string, string) {
		return f.StartLine, f.Commit, f.RuleID, f.Secret
	})
}
