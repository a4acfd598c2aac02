// Package policy reads .mlwarden.yaml and applies what it and a baseline say
// to a scan's result: which checks run, the severity that fails the run, and
// which findings are suppressed (with a reason, until an expiry date).
// Suppressed findings stay in the result, marked, and are counted apart.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

// FileName is the config file picked up from a scanned directory.
const FileName = ".mlwarden.yaml"

// Config is .mlwarden.yaml.
type Config struct {
	// Checks enables only these checks (default: all).
	Checks []string `yaml:"checks"`
	// FailOn is the lowest severity that fails the run (default high).
	FailOn *Severity `yaml:"fail-on"`
	// MaxFileSize is the largest file scanned, e.g. "2GiB" (default 64GiB).
	MaxFileSize string `yaml:"max-file-size"`
	// Ignore suppresses findings.
	Ignore []Ignore `yaml:"ignore"`
	// Baseline is a previous JSON report whose findings are suppressed.
	Baseline string `yaml:"baseline"`

	// Sections owned by single checks and commands, decoded by them with
	// DecodeSection so that their types stay in their packages.
	Secrets    yaml.Node `yaml:"secrets"`
	Signatures yaml.Node `yaml:"signatures"`
	CUDA       yaml.Node `yaml:"cuda"`
	Pins       yaml.Node `yaml:"pins"`
	Models     yaml.Node `yaml:"models"`
	Serve      yaml.Node `yaml:"serve"`

	// Path is the file the config was read from ("" for none).
	Path string `yaml:"-"`
}

// Severity is a severity read from YAML, with the line it was on.
type Severity struct {
	scanners.Severity
	Line int
}

// UnmarshalYAML reads a severity name.
func (s *Severity) UnmarshalYAML(n *yaml.Node) error {
	v, err := scanners.ParseSeverity(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	s.Severity, s.Line = v, n.Line
	return nil
}

// Ignore is one suppression. At least one of Rule, Path and Fingerprint must
// be set; all that are set must match. Reason is required.
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

	line    int
	expires time.Time
}

// UnmarshalYAML reads and validates one entry, keeping its line for messages.
func (ig *Ignore) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			switch k.Value {
			case "rule", "path", "fingerprint", "reason", "expires":
			default:
				return fmt.Errorf("line %d: unknown key %q in an ignore entry (valid: rule, path, fingerprint, reason, expires)", k.Line, k.Value)
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

func (ig Ignore) matches(f scanners.Finding) bool {
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

var yamlLine = regexp.MustCompile(`^yaml: (?:unmarshal errors:\n\s*)?`)

// Parse reads a config from data; name is used in error messages.
func Parse(name string, data []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		msg := yamlLine.ReplaceAllString(err.Error(), "")
		msg = strings.ReplaceAll(msg, "in type policy.plain", "in an ignore entry")
		msg = strings.ReplaceAll(msg, "in type policy.Config", "(valid keys: checks, fail-on, max-file-size, ignore, baseline, secrets, signatures, cuda, pins, models, serve)")
		return nil, fmt.Errorf("config %s: %s", name, strings.Join(strings.Fields(msg), " "))
	}
	c.Path = name
	return &c, nil
}

// Load reads the config at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Find returns the config to use: explicit when set, otherwise .mlwarden.yaml
// in the first directory target that has one, otherwise an empty config.
func Find(explicit string, targets []string) (*Config, error) {
	if explicit != "" {
		return Load(explicit)
	}
	for _, t := range targets {
		p := filepath.Join(strings.TrimPrefix(t, "dir:"), FileName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return Load(p)
		}
	}
	if fi, err := os.Stat(FileName); err == nil && fi.Mode().IsRegular() {
		return Load(FileName)
	}
	return &Config{}, nil
}

// DecodeSection decodes one check's section strictly into v. An absent
// section leaves v as it is.
func (c *Config) DecodeSection(n *yaml.Node, key string, v any) error {
	if n == nil || n.Kind == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return fmt.Errorf("config %s: %s: %w", c.Path, key, err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		// Re-encoding loses the original lines; name the section's line.
		msg := yamlLine.ReplaceAllString(err.Error(), "")
		return fmt.Errorf("config %s: line %d: %s: %s", c.Path, n.Line, key, strings.Join(strings.Fields(msg), " "))
	}
	return nil
}

// ValidateChecks checks names against the valid checks, naming the line.
func (c *Config) ValidateChecks(valid []string) error {
	for _, ch := range c.Checks {
		if !slices.Contains(valid, ch) {
			return fmt.Errorf("config %s: checks: unknown check %q (valid: %s)", c.Path, ch, strings.Join(valid, ", "))
		}
	}
	return nil
}

// Apply marks the findings that an ignore entry or the baseline matches,
// and recounts the summary. It returns warnings for entries that have
// expired (they no longer apply, so the findings show again).
func Apply(res *scanners.Result, ignores []Ignore, baseline map[string]bool, now time.Time) []string {
	var warnings []string
	for _, ig := range ignores {
		if ig.expired(now) {
			warnings = append(warnings, fmt.Sprintf("ignore entry at line %d (%s) expired on %s and no longer applies", ig.line, ig.Reason, ig.Expires))
		}
	}
	for i := range res.Findings {
		f := &res.Findings[i]
		if f.Suppressed != "" {
			continue
		}
		if baseline[f.Fingerprint] {
			f.Suppressed = "in baseline"
			continue
		}
		for _, ig := range ignores {
			if !ig.expired(now) && ig.matches(*f) {
				f.Suppressed = "ignored: " + ig.Reason
				if ig.Expires != "" {
					f.Suppressed += " (until " + ig.Expires + ")"
				}
				break
			}
		}
	}
	res.Summary = scanners.Summarize(res.Findings)
	return warnings
}

// Baseline reads the fingerprints of a previous JSON report.
func Baseline(res *scanners.Result) map[string]bool {
	m := make(map[string]bool, len(res.Findings))
	for _, f := range res.Findings {
		if f.Fingerprint != "" {
			m[f.Fingerprint] = true
		}
	}
	return m
}
