package suppress

import (
	"fmt"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

// Ignore is one ignore entry of the config file. At least one of Rule, Path
// and Fingerprint must be set; all that are set must match. Reason is
// required.
type Ignore struct {
	// Rule is a rule ID, "CHECK/*" or "*".
	Rule string `yaml:"rule"`
	// Path is a glob over the finding's path ("**" spans directories).
	Path string `yaml:"path"`
	// Fingerprint is a finding's fingerprint from a report.
	Fingerprint string `yaml:"fingerprint"`
	Reason      string `yaml:"reason"`
	// Expires (YYYY-MM-DD) is the last day the entry applies.
	Expires string `yaml:"expires"`
	// Unless, when "live", keeps the entry from applying to a finding
	// whose credential the provider said works (--verify-secrets): a test
	// token that is accepted, or a key someone forgot to revoke, fails the
	// run again.
	Unless string `yaml:"unless"`

	line    int
	expires time.Time
}

// UnmarshalYAML reads and validates one entry, keeping its line for messages.
func (ig *Ignore) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			switch k.Value {
			case "rule", "path", "fingerprint", "reason", "expires", "unless":
			default:
				return fmt.Errorf("line %d: unknown key %q in an ignore entry (valid: rule, path, fingerprint, reason, expires, unless)", k.Line, k.Value)
			}
		}
	}
	type plain Ignore
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*ig = Ignore(p)
	ig.line = n.Line
	switch {
	case ig.Rule == "" && ig.Path == "" && ig.Fingerprint == "":
		return fmt.Errorf("line %d: ignore entry needs at least one of rule, path, fingerprint", n.Line)
	case strings.TrimSpace(ig.Reason) == "":
		return fmt.Errorf("line %d: ignore entry needs a reason", n.Line)
	}
	if ig.Path != "" && !doublestar.ValidatePattern(ig.Path) {
		return fmt.Errorf("line %d: ignore path %q is not a valid glob", n.Line, ig.Path)
	}
	if ig.Rule != "" && ig.Rule != "*" && !strings.Contains(ig.Rule, "/") {
		return fmt.Errorf("line %d: ignore rule %q is not a rule ID (CHECK/NAME, CHECK/* or *)", n.Line, ig.Rule)
	}
	if ig.Unless != "" && ig.Unless != UnlessLive {
		return fmt.Errorf("line %d: unless %q: the only condition is %q", n.Line, ig.Unless, UnlessLive)
	}
	if ig.Expires != "" {
		t, err := time.Parse(time.DateOnly, ig.Expires)
		if err != nil {
			return fmt.Errorf("line %d: expires %q is not a date (YYYY-MM-DD)", n.Line, ig.Expires)
		}
		ig.expires = t
	}
	return nil
}

// Line is the line of the entry in its file.
func (ig Ignore) Line() int { return ig.line }

// expired reports whether the entry no longer applies on day now.
func (ig Ignore) expired(now time.Time) bool {
	return !ig.expires.IsZero() && now.After(ig.expires.AddDate(0, 0, 1))
}

// matchesAs reports whether ig matches f when f's fingerprint is fp (an
// earlier version's fingerprint of it).
func (ig Ignore) matchesAs(f scanners.Finding, fp string) bool {
	f.Fingerprint = fp
	return ig.Fingerprint != "" && ig.matches(f)
}

// UnlessLive is the one value of Ignore.Unless.
const UnlessLive = "live"

func (ig Ignore) matches(f scanners.Finding) bool {
	if ig.Unless == UnlessLive && f.Verification == scanners.VerificationLive {
		return false
	}
	if ig.Rule != "" && ig.Rule != "*" && ig.Rule != f.RuleID {
		check, _, _ := strings.Cut(f.RuleID, "/")
		if ig.Rule != check+"/*" {
			return false
		}
	}
	if ig.Path != "" {
		ok, _ := doublestar.Match(ig.Path, strings.TrimPrefix(f.Path, "/"))
		if !ok {
			return false
		}
	}
	return ig.Fingerprint == "" || ig.Fingerprint == f.Fingerprint
}
