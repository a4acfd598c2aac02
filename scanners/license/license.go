// Package license names a model's licence as SPDX does: it turns what a
// model card, a file's metadata or an artifact's annotations say (an SPDX
// identifier or expression, a Hugging Face Hub licence key, "other" with a
// name) into an SPDX licence expression, and says whether that licence
// forbids commercial use or allows research only.
//
// The SPDX licence list and the expression grammar are
// github.com/github/go-spdx/v2's (the list is generated from
// spdx/license-list-data; spdxlicenses.LicenseListVersion says which
// release). What no library knows is written here, each table with its
// source: the Hub's own licence keys (hub.go) and the licences that count as
// restricted (restricted.go).
package license

import (
	"strings"

	"github.com/github/go-spdx/v2/spdxexp"
)

// maxLen bounds the text Normalize parses: a licence field longer than this
// is not a licence name.
const maxLen = 512

// Normalize returns raw as an SPDX licence expression: an SPDX identifier
// in its canonical case ("apache-2.0" → "Apache-2.0"), a deprecated one
// replaced by its successor where SPDX names one ("GPL-3.0" →
// "GPL-3.0-only"), an expression with each identifier so normalised, a Hub
// licence key mapped by the Hub table, or a LicenseRef-… kept as it is. It
// returns "" when raw names no licence: empty, "unknown", "other" (use
// Other with the card's licence_name), or text that is neither an
// identifier nor an expression.
func Normalize(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" || len(s) > maxLen {
		return ""
	}
	if id, ok := hubKey(s); ok {
		return id
	}
	norm, bad := spdxexp.ValidateAndNormalizeLicensesWithOptions([]string{s}, spdxexp.ValidateLicensesOptions{})
	if len(bad) > 0 || len(norm) != 1 {
		return ""
	}
	return successor(norm[0])
}

// Other is the licence of a card that says "license: other" with a
// license_name (and perhaps a license_link): LicenseRef- and the name made
// an SPDX idstring (letters, digits, "." and "-"). A name that is an SPDX
// identifier or a Hub key is normalised as such. "" when name is empty.
func Other(name string) string {
	if id := Normalize(name); id != "" {
		return id
	}
	return Ref(name)
}

// Ref is LicenseRef- followed by name made an SPDX idstring; "" when
// nothing of name is left.
func Ref(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.TrimSpace(name) {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	id := strings.TrimRight(b.String(), "-")
	if id == "" {
		return ""
	}
	return "LicenseRef-" + id
}

// Join returns the expression under which all of ids apply (a card that
// lists several licences): "A AND B", each compound one in parentheses,
// without repeats or empty ones.
func Join(ids []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		if strings.ContainsAny(id, " ") {
			id = "(" + id + ")"
		}
		parts = append(parts, id)
	}
	if len(parts) == 1 {
		return strings.Trim(parts[0], "()")
	}
	return strings.Join(parts, " AND ")
}

// successor replaces the deprecated GNU identifiers that go-spdx keeps (it
// normalises "gpl-3.0" to the deprecated "GPL-3.0") by the identifiers the
// SPDX licence list names as their replacement (the -only forms, SPDX
// licence list 3.0 release notes).
func successor(expr string) string {
	f := strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(expr))
	changed := false
	for i, t := range f {
		if r, ok := gnuDeprecated[t]; ok {
			f[i], changed = r, true
		}
	}
	if !changed {
		return expr
	}
	return strings.NewReplacer("( ", "(", " )", ")").Replace(strings.Join(f, " "))
}

var gnuDeprecated = map[string]string{
	"GPL-1.0": "GPL-1.0-only", "GPL-2.0": "GPL-2.0-only", "GPL-3.0": "GPL-3.0-only",
	"LGPL-2.0": "LGPL-2.0-only", "LGPL-2.1": "LGPL-2.1-only", "LGPL-3.0": "LGPL-3.0-only",
	"AGPL-1.0": "AGPL-1.0-only", "AGPL-3.0": "AGPL-3.0-only",
	"GFDL-1.1": "GFDL-1.1-only", "GFDL-1.2": "GFDL-1.2-only", "GFDL-1.3": "GFDL-1.3-only",
}
