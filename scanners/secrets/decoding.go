package secrets

import (
	"context"
	"regexp"
	"slices"

	"github.com/zricethezav/gitleaks/v8/detect/codec"

	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// The decoding passes.
//
// gitleaks' decoding detector runs every rule whose keyword the text holds
// over the whole text, then decodes its encoded segments (codec) and runs
// the rules again over the decoded text — the whole of it, where it keeps
// only the matches that overlap a segment decoded in that pass —, up to
// decodeDepth times. Profiled on Debian's Python packages as an image, the
// windows that hold a segment that may decode (windows.go) were 2 MB of
// 500, and gitleaks' detector over them was 7.5 of 19.7 s CPU: Go's
// regexp over the raw text and twice over the decoded text, for a hundred
// rules at a time in the many fragments that go whole (the windows of
// code cover most of it).
//
// detectDecoding does the same passes with the plain detector's means:
// the plain pass is plainFindings; each decoding pass decodes with
// gitleaks' own codec, finds the literals of the decoded text in one pass
// and runs the prefixed rules from their places (findAllAt, which returns
// what FindAllStringIndex does), keeping a match as detectRule does
// (prefixedRule.finding, with the pass's segments). Where one of rest's
// rules would run in a decoding pass (its keyword in the decoded text),
// rest runs with gitleaks' decoding detector over its own rules instead of
// the plain one: it decodes the same segments and finds, in the plain
// pass, what the plain one does. Text whose decoding holds a letter that
// folds outside ASCII (a percent or Unicode escape can spell one) goes to
// gitleaks' detector over every rule (full), like such raw text.
// gitleaks' give-way filter runs once over all the findings: it drops only
// generic findings, for a finding of another rule that is never dropped,
// so filtering part of them before changes nothing.
// TestDecodingSame compares with gitleaks' decoding detector on every
// rule's cases encoded once and twice, in code and on the fixtures;
// FuzzDecodingSame on what the fuzzer makes of them.

// restRule is one of rest's rules that matches text: its keywords, as ids
// of the detector's finder, and the path it is limited to (or nil).
type restRule struct {
	kws  []int32
	path *regexp.Regexp
}

// decodedPass is the text of a fragment after a decoding pass, the
// segments that pass decoded, and the literals of the text (find).
type decodedPass struct {
	raw  string
	segs []*codec.EncodedSegment
	hits []litHit
}

// detectDecoding finds what full, gitleaks' detector over every rule with
// decodeDepth decoding passes, finds in f, whose literals are known
// (what find(f.Raw) returns); pf is facts(f), or nil.
//
// wins, when not nil, are the decode windows (windows.go) that hold every
// segment of f that may decode: then the plain pass runs over all of f
// and the decoding passes over each window alone — a fragment goes whole
// when its keyword windows cover most of it, and gitleaks' codec over all
// of it was the decoding passes' largest cost. Where one of rest's rules
// would run in a window's decoding pass, f is decoded whole.
func (d *prefixedDetector) detectDecoding(ctx context.Context, f engine.Fragment, known []litHit, pf *pathFacts, wins []span, full fragmentDetector) []engine.Finding {
	if !d.plainText(f) {
		return full.DetectContext(ctx, f)
	}
	if pf == nil {
		pf = d.facts(f)
	}
	if d.scansNothing(f, pf) {
		return nil
	}
	if wins != nil {
		if out, ok := d.decodedIn(ctx, f, pf, wins); ok {
			plain, _ := d.plainFindings(ctx, f, pf, known, true, d.rest)
			return giveWay(append(out, plain...))
		}
	}
	passes, restDecodes, ok := d.decodePasses(ctx, f)
	if !ok {
		return full.DetectContext(ctx, f)
	}
	var out []engine.Finding
	var rest fragmentDetector = d.rest
	if restDecodes {
		out, rest = d.restDecoding().DetectContext(ctx, f), nil
	}
	plain, _ := d.plainFindings(ctx, f, pf, known, true, rest)
	out = append(out, plain...)
	for _, p := range passes {
		out = d.decodedFindings(ctx, f, pf, p, out)
	}
	return giveWay(out)
}

// decodedIn returns the prefixed rules' findings in the decoding passes of
// each of wins alone, windows of f; false where a window's decoding needs
// more (one of rest's rules would run there, or a letter that folds
// outside ASCII appears).
func (d *prefixedDetector) decodedIn(ctx context.Context, f engine.Fragment, pf *pathFacts, wins []span) ([]engine.Finding, bool) {
	var out []engine.Finding
	for _, w := range wins {
		wf := f
		wf.Raw, wf.StartLine = f.Raw[w.start:w.end], f.StartLine+w.line
		passes, restDecodes, ok := d.decodePasses(ctx, wf)
		if !ok || restDecodes {
			return nil, false
		}
		for _, p := range passes {
			out = d.decodedFindings(ctx, wf, pf, p, out)
		}
	}
	return out, true
}

// decodePasses decodes f as gitleaks' decoding passes do, and reports
// whether one of rest's rules would run in one of them; false when the
// decoded text holds a letter that folds outside ASCII (then gitleaks'
// detector over every rule must run).
func (d *prefixedDetector) decodePasses(ctx context.Context, f engine.Fragment) (passes []decodedPass, restDecodes, ok bool) {
	dec := codec.NewDecoder()
	raw, segs := f.Raw, []*codec.EncodedSegment{}
	for depth := 1; depth <= decodeDepth && ctx.Err() == nil; depth++ {
		raw, segs = dec.Decode(raw, segs)
		if len(segs) == 0 {
			break
		}
		if foldsOutsideASCII(raw) {
			return nil, false, false
		}
		p := decodedPass{raw: raw, segs: segs, hits: d.find(raw, nil)}
		restDecodes = restDecodes || d.restRunsOn(f, p.hits)
		passes = append(passes, p)
	}
	return passes, restDecodes, true
}

// restRunsOn reports whether one of rest's rules would run on text whose
// literals are hits, in f: one of its keywords is there (or it has none,
// or one outside ASCII, which the finder does not see), and f's path is
// one it is limited to.
func (d *prefixedDetector) restRunsOn(f engine.Fragment, hits []litHit) bool {
	if len(d.restText) == 0 {
		return false
	}
	if d.restAlways {
		return true
	}
	seen := make([]bool, len(d.starting))
	for _, h := range hits {
		seen[h.id] = true
	}
	for _, r := range d.restText {
		if (len(r.kws) == 0 || slices.ContainsFunc(r.kws, func(id int32) bool { return seen[id] })) &&
			(r.path == nil || r.path.MatchString(f.FilePath)) {
			return true
		}
	}
	return false
}

// decodedFindings appends to out the prefixed rules' findings in one
// decoding pass over f (whose pathFacts are pf): detectRule's over the
// pass's text, for the rules whose keywords it holds.
func (d *prefixedDetector) decodedFindings(ctx context.Context, f engine.Fragment, pf *pathFacts, p decodedPass, out []engine.Finding) []engine.Finding {
	seen := make([]bool, len(d.starting))
	var starts []litHit
	for _, h := range p.hits {
		seen[h.id] = true
		if d.starting[h.id] {
			starts = append(starts, h)
		}
	}
	return d.ruleFindings(ctx, f, pf, p.raw, p.segs, seen, starts, out)
}
