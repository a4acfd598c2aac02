package suppress

import (
	"bytes"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
)

// InlineIgnore is the marker that suppresses a rule on one line:
// "mlwarden:ignore RULE-ID" (several IDs may follow, separated by commas or
// spaces; with none, every rule on that line).
const InlineIgnore = "mlwarden:ignore"

// Inline marks the findings of one artifact whose line carries an inline
// ignore marker covering their rule. data is the artifact's whole content;
// findings located in other files (a manifest's finding about the file it
// names) are left alone. The dispatcher calls it while the content is in
// memory (scanners.WithInlineSuppression).
func Inline(a *scanners.Artifact, data []byte, fs []scanners.Finding) {
	if data == nil || len(fs) == 0 || !bytes.Contains(data, []byte(InlineIgnore)) {
		return
	}
	lines := bytes.Split(data, []byte{'\n'})
	for i := range fs {
		f := &fs[i]
		if f.Line <= 0 || f.Path != a.Path || f.Suppressed != "" {
			continue
		}
		idx := f.Line // content line for plain files
		if a.Lines != nil {
			idx = slices.Index(a.Lines, f.Line) + 1
		}
		if idx <= 0 || idx > len(lines) {
			continue
		}
		if ignores(lines[idx-1], f.RuleID) {
			f.Suppressed = "inline " + InlineIgnore + " comment"
		}
	}
}

// ignores reports whether line carries an inline ignore marker that covers
// rule.
func ignores(line []byte, rule string) bool {
	_, rest, ok := bytes.Cut(line, []byte(InlineIgnore))
	if !ok {
		return false
	}
	fields := strings.FieldsFunc(string(rest), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	ids := 0
	for _, fld := range fields {
		if !strings.Contains(fld, "/") {
			break // the IDs end where prose begins
		}
		ids++
		if fld == rule || strings.TrimRight(fld, "*") == strings.SplitN(rule, "/", 2)[0]+"/" {
			return true
		}
	}
	return ids == 0
}

// Markers of other secret scanners, honoured on a secrets finding's line
// so that a project moving over keeps its reviewed exceptions: gitleaks'
// "gitleaks:allow" anywhere on the line, and detect-secrets' "pragma:
// allowlist secret" on the line or "pragma: allowlist nextline secret" on
// the line before (detect-secrets' filters/allowlist.py accepts one optional
// space after "pragma:" and a space or a dash between the words).
const GitleaksAllow = "gitleaks:allow"

var (
	pragmaSameLine = lazyregexp.New(`pragma:\s?allowlist[ -]secret`)
	pragmaNextLine = lazyregexp.New(`pragma:\s?allowlist[ -]nextline[ -]secret`)
)

// SecretAllowed reports whether a secrets finding is allowed by a marker of
// gitleaks or detect-secrets: lines are the lines the finding's match spans,
// previous the line before them. reason is what the finding's Suppressed
// says: the finding stays in the result, counted as suppressed, never
// dropped (gitleaks' own detector drops such findings).
func SecretAllowed(lines, previous string) (reason string, ok bool) {
	switch {
	case strings.Contains(lines, GitleaksAllow):
		return "inline " + GitleaksAllow + " comment", true
	case pragmaSameLine.MatchString(lines):
		return "inline detect-secrets pragma: allowlist secret comment", true
	case pragmaNextLine.MatchString(previous):
		return "detect-secrets pragma: allowlist nextline secret on the line before", true
	}
	return "", false
}
