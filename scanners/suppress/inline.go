package suppress

import (
	"bytes"
	"slices"
	"strings"

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
