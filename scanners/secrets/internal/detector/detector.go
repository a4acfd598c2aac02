// Package detector runs gitleaks rules over one fragment of text as
// gitleaks v8.30's detect package does (Detector.DetectContext), on
// gitleaks' own config and codec packages, for the sbatch hook's build
// (tag mlwarden_sbatch).
//
// It is written by hand because importing gitleaks' detect package links
// its sources and report packages — archive readers, file-type sniffing,
// git diff parsing, report templates — whose package initialisation alone
// costs a one-script process about 2 ms of its 12 (docs/design/sbatch-hook.md),
// and no library offers gitleaks' detection without them. The check's
// default build uses gitleaks' detect itself; TestDetectorSame (in
// package secrets) finds the same findings with both on every rule case,
// and FuzzDetectorSame on what the fuzzer makes of them.
//
// What it leaves out: the detector's sources, reports, baseline and
// .gitleaksignore handling (the check does its own), redaction, the
// size limit, and links to a commit's web page (the hook reads no git
// history).
package detector

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect/codec"
)

// allowSignature marks a line whose findings gitleaks drops.
const allowSignature = "gitleaks:allow"

// Fragment is gitleaks' sources.Fragment: text to scan and where it is.
type Fragment struct {
	Raw   string
	Bytes []byte
	// FilePath is the file's path with / as separator; WindowsFilePath
	// the path with its own separator, where it differs.
	FilePath        string
	SymlinkFile     string
	WindowsFilePath string `json:"-"`
	CommitSHA       string
	// StartLine is the line the fragment starts on.
	StartLine  int
	CommitInfo *CommitInfo
	// InheritedFromFinding marks the fragment a composite rule's required
	// rules run on.
	InheritedFromFinding bool
}

// CommitInfo is gitleaks' sources.CommitInfo without the remote.
type CommitInfo struct {
	AuthorEmail string
	AuthorName  string
	Date        string
	Message     string
	SHA         string
}

// Finding is gitleaks' report.Finding.
type Finding struct {
	RuleID      string
	Description string

	StartLine   int
	EndLine     int
	StartColumn int
	EndColumn   int

	Line   string `json:"-"`
	Match  string
	Secret string

	File        string
	SymlinkFile string
	Commit      string
	Link        string `json:",omitempty"`

	Entropy float32

	Author  string
	Email   string
	Date    string
	Message string
	Tags    []string

	Fingerprint string
	Fragment    *Fragment `json:",omitempty"`

	// required holds, for a composite rule, the findings of the rules it
	// requires (gitleaks keeps them private as well).
	required []RequiredFinding
}

// RequiredFinding is gitleaks' report.RequiredFinding: a required rule's
// finding near a composite rule's.
type RequiredFinding struct {
	RuleID      string
	StartLine   int
	EndLine     int
	StartColumn int
	EndColumn   int
	Line        string `json:"-"`
	Match       string
	Secret      string
}

// Detector finds what gitleaks' detector over Config finds.
type Detector struct {
	Config config.Config
	// MaxDecodeDepth is how many decoding passes (base64, hex, percent
	// and Unicode escapes: gitleaks' codec) follow the plain one.
	MaxDecodeDepth int
	// IgnoreGitleaksAllow keeps findings on lines marked gitleaks:allow.
	IgnoreGitleaksAllow bool

	ids      []string // Config.Rules' ids, sorted
	keywords []string // Config.Keywords, sorted
}

// NewDetector returns a detector over cfg.
func NewDetector(cfg config.Config) *Detector {
	return &Detector{
		Config:   cfg,
		ids:      slices.Sorted(maps.Keys(cfg.Rules)),
		keywords: slices.Sorted(maps.Keys(cfg.Keywords)),
	}
}

// DetectContext returns the findings of the rules in f.
//
// gitleaks runs the rules in map order; the findings are the same in
// any order but their order, which the check sorts.
func (d *Detector) DetectContext(ctx context.Context, f Fragment) []Finding {
	if f.FilePath != "" && f.FilePath == d.Config.Path {
		return nil // gitleaks never scans its own config file
	}
	if PathOrCommitAllowed(f.FilePath, f.WindowsFilePath, f.CommitSHA, d.Config.Allowlists) {
		return nil
	}
	var (
		out      []Finding
		raw      = f.Raw
		segments []*codec.EncodedSegment
		decoder  = codec.NewDecoder()
		newlines [][]int
	)
	for depth := 0; ctx.Err() == nil; depth++ {
		// gitleaks matches its keywords (lower-cased) in the lower-cased
		// text with Aho-Corasick, which finds every occurrence: a
		// keyword is there when the text holds it.
		lower := strings.ToLower(raw)
		present := make(map[string]bool, 8)
		for _, k := range d.keywords {
			if strings.Contains(lower, k) {
				present[k] = true
			}
		}
		for _, id := range d.ids {
			if ctx.Err() != nil {
				return giveWayFindings(out)
			}
			r := d.Config.Rules[id]
			if len(r.Keywords) > 0 && !slices.ContainsFunc(r.Keywords, func(k string) bool { return present[strings.ToLower(k)] }) {
				continue
			}
			out = append(out, d.detectRule(f, raw, r, segments, &newlines)...)
		}
		if depth+1 > d.MaxDecodeDepth {
			break
		}
		raw, segments = decoder.Decode(raw, segments)
		if len(segments) == 0 {
			break
		}
	}
	return giveWayFindings(out)
}

// detectRule is gitleaks' detectRule: r's findings in raw, the text of f
// as the current decoding pass has it.
func (d *Detector) detectRule(f Fragment, raw string, r config.Rule, segments []*codec.EncodedSegment, newlines *[][]int) []Finding {
	if r.SkipReport && !f.InheritedFromFinding {
		return nil
	}
	if PathOrCommitAllowed(f.FilePath, f.WindowsFilePath, f.CommitSHA, r.Allowlists) {
		return nil
	}
	if r.Path != nil {
		inPath := r.Path.MatchString(f.FilePath) || f.WindowsFilePath != "" && r.Path.MatchString(f.WindowsFilePath)
		if r.Regex == nil && len(segments) == 0 {
			if !inPath {
				return nil
			}
			g := Finding{
				Commit:      f.CommitSHA,
				RuleID:      r.RuleID,
				Description: r.Description,
				File:        f.FilePath,
				SymlinkFile: f.SymlinkFile,
				Match:       "file detected: " + f.FilePath,
				Tags:        r.Tags,
			}
			withCommit(&g, f)
			return []Finding{g}
		}
		if !inPath {
			return nil
		}
	}
	if r.Regex == nil {
		return nil
	}
	matches := r.Regex.FindAllStringIndex(raw, -1)
	if len(matches) == 0 {
		return nil
	}
	if *newlines == nil {
		*newlines = Newlines(f.Raw)
	}
	var out []Finding
	for _, m := range matches {
		secret := strings.Trim(raw[m[0]:m[1]], "\n")
		var tags []string
		line := ""
		if len(segments) > 0 {
			segs := codec.SegmentsWithDecodedOverlap(segments, m[0], m[1])
			if len(segs) == 0 {
				continue // an earlier pass found it
			}
			m = codec.AdjustMatchIndex(segs, m)
			tags = codec.Tags(segs)
			line = codec.CurrentLine(segs, raw)
		} else {
			m[1] = m[0] + len(secret) // gitleaks issue 1352: no trailing newline
		}
		loc := Locate(*newlines, f.Raw, m)
		if m[1] > loc.EndLineIndex {
			loc.EndLineIndex = m[1]
		}
		g := Finding{
			Commit:      f.CommitSHA,
			RuleID:      r.RuleID,
			Description: r.Description,
			StartLine:   f.StartLine + loc.StartLine,
			EndLine:     f.StartLine + loc.EndLine,
			StartColumn: loc.StartColumn,
			EndColumn:   loc.EndColumn,
			Line:        f.Raw[loc.StartLineIndex:loc.EndLineIndex],
			Match:       secret,
			Secret:      secret,
			File:        f.FilePath,
			SymlinkFile: f.SymlinkFile,
			Tags:        append(r.Tags, tags...),
		}
		withCommit(&g, f)
		if !d.IgnoreGitleaksAllow && strings.Contains(g.Line, allowSignature) {
			continue
		}
		if line == "" {
			line = g.Line
		}
		var ok bool
		if g.Secret, ok = SecretOf(r, g.Secret); !ok {
			continue
		}
		e := Entropy(g.Secret)
		g.Entropy = float32(e)
		if r.Entropy != 0 && e <= r.Entropy {
			continue
		}
		if FindingAllowed(g.Secret, g.Match, line, f.FilePath, f.WindowsFilePath, f.CommitSHA, d.Config.Allowlists) ||
			FindingAllowed(g.Secret, g.Match, line, f.FilePath, f.WindowsFilePath, f.CommitSHA, r.Allowlists) {
			continue
		}
		out = append(out, g)
	}
	if f.InheritedFromFinding || len(r.RequiredRules) == 0 {
		return out
	}
	return d.composite(f, raw, r, segments, out, newlines)
}

// withCommit copies f's commit details into g.
func withCommit(g *Finding, f Fragment) {
	if c := f.CommitInfo; c != nil {
		g.Author, g.Date, g.Email, g.Message = c.AuthorName, c.Date, c.AuthorEmail, c.Message
	}
}

// composite is gitleaks' processRequiredRules: a composite rule's
// findings that have, for each rule it requires, a finding of that rule
// near enough.
func (d *Detector) composite(f Fragment, raw string, r config.Rule, segments []*codec.EncodedSegment, primary []Finding, newlines *[][]int) []Finding {
	if len(primary) == 0 {
		return primary
	}
	found := map[string][]Finding{}
	for _, req := range r.RequiredRules {
		rr, ok := d.Config.Rules[req.RuleID]
		if !ok {
			continue
		}
		inherited := f
		inherited.InheritedFromFinding = true
		found[req.RuleID] = d.detectRule(inherited, raw, rr, segments, newlines)
	}
	var out []Finding
	for _, p := range primary {
		var near []RequiredFinding
		seen := map[string]bool{}
		for _, req := range r.RequiredRules {
			for _, g := range found[req.RuleID] {
				if within(p, g, req) {
					near = append(near, RequiredFinding{
						RuleID: g.RuleID, StartLine: g.StartLine, EndLine: g.EndLine,
						StartColumn: g.StartColumn, EndColumn: g.EndColumn,
						Line: g.Line, Match: g.Match, Secret: g.Secret,
					})
					seen[g.RuleID] = true
				}
			}
		}
		if len(near) == 0 || slices.ContainsFunc(r.RequiredRules, func(req *config.Required) bool { return !seen[req.RuleID] }) {
			continue
		}
		p.required = append(p.required, near...)
		out = append(out, p)
	}
	return out
}

// within is gitleaks' withinProximity.
func within(primary, required Finding, req *config.Required) bool {
	if req.WithinLines != nil && abs(primary.StartLine-required.StartLine) > *req.WithinLines {
		return false
	}
	if req.WithinColumns != nil && abs(primary.StartColumn-required.StartColumn) > *req.WithinColumns {
		return false
	}
	return true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// giveWayFindings is GiveWay over findings.
func giveWayFindings(fs []Finding) []Finding {
	return GiveWay(fs, func(f *Finding) (int, string, string, string) { return f.StartLine, f.Commit, f.RuleID, f.Secret })
}

// The rest is gitleaks' detect package's helpers (v8.30.0), over plain
// values so that the check's own detector of prefixed rules (which works
// on gitleaks' types in the default build) uses them too.

// SecretOf is the secret of a match of r: the match, or with capture
// groups r's secret group, or the first group that is not empty; false
// when r names a group its regexp does not have.
func SecretOf(r config.Rule, match string) (string, bool) {
	groups := r.Regex.FindStringSubmatch(match)
	if len(groups) < 2 {
		return match, true
	}
	if r.SecretGroup > 0 {
		if len(groups) <= r.SecretGroup {
			return match, false
		}
		return groups[r.SecretGroup], true
	}
	for _, s := range groups[1:] {
		if s != "" {
			return s, true
		}
	}
	return match, true
}

// Newlines is detectRule's newLineRegexp.FindAllStringIndex(raw, -1).
func Newlines(raw string) [][]int {
	out := [][]int{}
	for i := 0; ; {
		j := strings.IndexByte(raw[i:], '\n')
		if j < 0 {
			return out
		}
		out = append(out, []int{i + j, i + j + 1})
		i += j + 1
	}
}

// Location is where a match is: lines and columns, and the byte offsets
// of the line (or lines) it is on.
type Location struct {
	StartLine, EndLine, StartColumn, EndColumn, StartLineIndex, EndLineIndex int
}

// Locate is gitleaks' location: where the match m of raw is, given raw's
// Newlines.
func Locate(newlines [][]int, raw string, m []int) Location {
	var (
		prev    int
		loc     Location
		lineSet bool
		lineNum int
	)
	start, end := m[0], m[1]
	if len(newlines) == 0 {
		newlines = [][]int{{len(raw), len(raw) + 1}}
	}
	for n, pair := range newlines {
		lineNum = n
		nl := pair[0]
		if prev <= start && start < nl {
			lineSet = true
			loc.StartLine, loc.EndLine = n, n
			loc.StartColumn = start - prev + 1
			loc.StartLineIndex, loc.EndLineIndex = prev, nl
		}
		if prev < end && end <= nl {
			loc.EndLine = n
			loc.EndColumn = end - prev
			loc.EndLineIndex = nl
		}
		prev = pair[0]
	}
	if !lineSet {
		loc.StartColumn = start - prev + 1
		loc.EndColumn = end - prev
		loc.StartLine, loc.EndLine = lineNum+1, lineNum+1
		i := 0
		for end+i < len(raw) && raw[end+i] != '\n' && raw[end+i] != '\r' {
			i++
		}
		loc.EndLineIndex = end + i
	}
	return loc
}

// Entropy is gitleaks' shannonEntropy of s, over its runes.
func Entropy(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	for _, c := range s {
		counts[c]++
	}
	inv := 1.0 / float64(len(s))
	var e float64
	for _, n := range counts {
		freq := float64(n) * inv
		e -= freq * math.Log2(freq)
	}
	return e
}

// GiveWay is gitleaks' filter without redaction: a generic rule's finding
// gives way to another rule's on the same line (and commit) whose secret
// holds its secret. key gives a finding's line, commit, rule and secret.
func GiveWay[F any](fs []F, key func(*F) (line int, commit, rule, secret string)) []F {
	generic := func(id string) bool { return strings.Contains(strings.ToLower(id), "generic") }
	var out []F
	for i := range fs {
		line, commit, rule, secret := key(&fs[i])
		include := true
		if generic(rule) {
			for j := range fs {
				l2, c2, r2, s2 := key(&fs[j])
				if line == l2 && commit == c2 && rule != r2 && strings.Contains(s2, secret) && !generic(r2) {
					include = false
					break
				}
			}
		}
		if include {
			out = append(out, fs[i])
		}
	}
	return out
}

// PathOrCommitAllowed is gitleaks' checkCommitOrPathAllowed: whether one
// of allowlists leaves out the file at path (winPath: with its own
// separator, or "") or the commit before any match is looked at.
func PathOrCommitAllowed(path, winPath, commit string, allowlists []*config.Allowlist) bool {
	return PathOrCommitAllowedBy(path, winPath, commit, allowlists, func(i int, p string) bool { return allowlists[i].PathAllowed(p) })
}

// PathOrCommitAllowedBy is PathOrCommitAllowed with pathAllowed(i, p) in
// place of allowlists[i].PathAllowed(p), which it must equal.
func PathOrCommitAllowedBy(path, winPath, commit string, allowlists []*config.Allowlist, pathAllowed func(i int, p string) bool) bool {
	if path == "" && commit == "" {
		return false
	}
	for i, a := range allowlists {
		commitAllowed, _ := a.CommitAllowed(commit)
		pathAllowed := path != "" && pathAllowed(i, path) || winPath != "" && pathAllowed(i, winPath)
		if a.MatchCondition == config.AllowlistMatchAnd {
			if len(a.Regexes) > 0 || len(a.StopWords) > 0 {
				continue // decided with the finding
			}
			var checks []bool
			if len(a.Commits) > 0 {
				checks = append(checks, commitAllowed)
			}
			if len(a.Paths) > 0 {
				checks = append(checks, pathAllowed)
			}
			if allTrue(checks) {
				return true
			}
		} else if commitAllowed || pathAllowed {
			return true
		}
	}
	return false
}

// FindingAllowed is gitleaks' checkFindingAllowed: whether one of
// allowlists leaves out a finding with this secret and match on line, in
// the file at path (winPath) and the commit.
func FindingAllowed(secret, match, line, path, winPath, commit string, allowlists []*config.Allowlist) bool {
	for _, a := range allowlists {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		regexAllowed := a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(secret)
		if a.MatchCondition != config.AllowlistMatchAnd {
			if regexAllowed || stop {
				return true
			}
			continue
		}
		var checks []bool
		if len(a.Commits) > 0 {
			ok, _ := a.CommitAllowed(commit)
			checks = append(checks, ok)
		}
		if len(a.Paths) > 0 {
			checks = append(checks, a.PathAllowed(path) || winPath != "" && a.PathAllowed(winPath))
		}
		if len(a.Regexes) > 0 {
			checks = append(checks, regexAllowed)
		}
		if len(a.StopWords) > 0 {
			checks = append(checks, stop)
		}
		if allTrue(checks) {
			return true
		}
	}
	return false
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}
