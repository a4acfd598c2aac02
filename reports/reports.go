// Package reports turns a scan's result into one output format: text for
// people, JSON (the contract in docs/architecture.md) for scripts, SARIF
// 2.1.0 for code scanning, a CycloneDX 1.6 ML-BOM, JUnit XML for CI test
// reports, GitLab security reports (SAST and secret detection, schema
// 15.2.1), and one self-contained HTML page.
package reports

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

// Formats lists the valid --format values.
var Formats = []string{"text", "json", "sarif", "cyclonedx", "junit", "gitlab", "gitlab-secrets", "html"}

// Options configures a writer.
type Options struct {
	// Color enables ANSI colour in the text format (on a terminal, without NO_COLOR).
	Color bool
	// ToolVersion is written into SARIF's tool.driver.version.
	ToolVersion string
	// Rules describes every rule, for SARIF's tool.driver.rules and the text
	// format's titles.
	Rules []scanners.Rule
	// ShowSuppressed lists suppressed findings in the text format too.
	ShowSuppressed bool
	// FailOn is --fail-on: JUnit writes a failure for each unsuppressed
	// finding at or above it (nil: none fails) and the HTML page marks them.
	FailOn *scanners.Severity
	// Start and End are when the scan ran: GitLab's scan times and the
	// BOM's timestamp (zero: the BOM has none, GitLab's are the Unix epoch).
	Start, End time.Time
	// SourceRoot is the directory mlwarden ran in, as an absolute path:
	// SARIF's %SRCROOT% (empty: described, not named).
	SourceRoot string
	// Category is SARIF's runAutomationDetails.id (default "mlwarden/"),
	// which tells GitHub apart the uploads of different scans; see
	// Category.
	Category string
}

// Category is the SARIF category of a scan of targets: "mlwarden/" plus the
// targets, so that a workflow that scans a directory and an image uploads
// two analyses instead of one replacing the other.
func Category(targets []string) string {
	var b strings.Builder
	b.WriteString("mlwarden/")
	for i, t := range targets {
		if i > 0 {
			b.WriteByte(',')
		}
		for _, r := range t {
			if r == '/' || r < ' ' || r == 0x7f {
				r = '_'
			}
			b.WriteRune(r)
		}
	}
	if len(targets) > 0 {
		b.WriteByte('/')
	}
	return b.String()
}

// Writer writes one format.
type Writer interface {
	Write(w io.Writer, res *scanners.Result) error
}

// New returns the writer for format, or an error naming the valid formats.
func New(format string, o Options) (Writer, error) {
	switch format {
	case "text", "":
		return &textWriter{o: o}, nil
	case "json":
		return jsonWriter{}, nil
	case "sarif":
		return &sarifWriter{o: o}, nil
	}
	if w := otherWriter(format, o); w != nil {
		return w, nil
	}
	return nil, fmt.Errorf("unknown format %q (valid: %s)", format, strings.Join(Formats, ", "))
}

// Write writes res to w in format.
func Write(w io.Writer, format string, res *scanners.Result, o Options) error {
	wr, err := New(format, o)
	if err != nil {
		return err
	}
	return wr.Write(w, res)
}

type jsonWriter struct{}

// Write writes the JSON report: exactly scanners.Result, indented, with a
// trailing newline.
func (jsonWriter) Write(w io.Writer, res *scanners.Result) error {
	// The lists are always arrays, never null: consumers index them.
	out := *res
	if out.Targets == nil {
		out.Targets = []scanners.Target{}
	}
	if out.Findings == nil {
		out.Findings = []scanners.Finding{}
	}
	if out.Errors == nil {
		out.Errors = []scanners.Error{}
	}
	res = &out
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(res)
}

// uuidNamespace is the RFC 9562 URL namespace; names are made under the
// project's URL.
var uuidNamespace = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// uuid5 is the name-based UUID (version 5) of name under the project's
// URL: IDs that reports need as UUIDs and that must be the same for the
// same input.
func uuid5(name string) string {
	h := sha1.New()
	h.Write(uuidNamespace[:])
	h.Write([]byte(InformationURI + "\x00" + name))
	b := h.Sum(nil)
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ReadJSON reads a JSON report, such as a baseline.
func ReadJSON(r io.Reader) (*scanners.Result, error) {
	var res scanners.Result
	dec := json.NewDecoder(r)
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("read JSON report: %w", err)
	}
	if res.Version != scanners.ReportVersion {
		return nil, fmt.Errorf("read JSON report: version %d, want %d", res.Version, scanners.ReportVersion)
	}
	return &res, nil
}

func ruleIndex(rules []scanners.Rule) map[string]scanners.Rule {
	m := make(map[string]scanners.Rule, len(rules))
	for _, r := range rules {
		m[r.ID] = r
	}
	return m
}

// usedRules returns the rules the findings name, in ID order, with a minimal
// description for a rule the index lacks.
func usedRules(res *scanners.Result, idx map[string]scanners.Rule) []scanners.Rule {
	seen := map[string]bool{}
	var out []scanners.Rule
	for _, f := range res.Findings {
		if seen[f.RuleID] {
			continue
		}
		seen[f.RuleID] = true
		r, ok := idx[f.RuleID]
		if !ok {
			r = scanners.Rule{ID: f.RuleID, Check: f.Check, Severity: f.Severity, Title: f.RuleID}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b scanners.Rule) int { return strings.Compare(a.ID, b.ID) })
	return out
}
