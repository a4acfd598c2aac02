//go:build !mlwarden_sbatch

package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

// GitLabSchemaVersion is the version of GitLab's security report schemas
// the gitlab formats declare (fixtures/schemas holds the files they are
// tested against).
const GitLabSchemaVersion = "15.2.1"

type gitlabKind int

const (
	gitlabSAST    gitlabKind = iota // every finding but the secrets check's
	gitlabSecrets                   // the secrets check's findings
)

// gitlabWriter writes a GitLab security report: "gitlab" a SAST report
// (artifacts:reports:sast) of every check's findings but the secrets
// check's, "gitlab-secrets" a secret detection report
// (artifacts:reports:secret_detection) of those. A pipeline that wants both
// runs the scan twice, or the first alone with --checks that leave secrets
// out. Suppressed findings are left out (GitLab has no suppression to mark
// them with). Each vulnerability's primary identifier is the rule ID; the
// second, the finding's fingerprint, keeps repeats of one rule in one file
// apart. Errors set the scan's status to failure, one message each.
type gitlabWriter struct {
	o    Options
	kind gitlabKind
}

type glReport struct {
	Version         string   `json:"version"`
	Schema          string   `json:"schema"`
	Scan            glScan   `json:"scan"`
	Vulnerabilities []glVuln `json:"vulnerabilities"`
}

type glScan struct {
	Analyzer  glTool      `json:"analyzer"`
	Scanner   glTool      `json:"scanner"`
	Type      string      `json:"type"`
	StartTime string      `json:"start_time"`
	EndTime   string      `json:"end_time"`
	Status    string      `json:"status"`
	Messages  []glMessage `json:"messages,omitempty"`
}

type glTool struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Version string   `json:"version"`
	Vendor  glVendor `json:"vendor"`
}

type glVendor struct {
	Name string `json:"name"`
}

type glMessage struct {
	Level string `json:"level"`
	Value string `json:"value"`
}

type glVuln struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Severity    string         `json:"severity"`
	Solution    string         `json:"solution,omitempty"`
	Identifiers []glIdentifier `json:"identifiers"`
	Location    glLocation     `json:"location"`
}

type glIdentifier struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Value string `json:"value"`
	URL   string `json:"url,omitempty"`
}

type glLocation struct {
	File      string    `json:"file,omitempty"`
	StartLine int       `json:"start_line,omitempty"`
	EndLine   int       `json:"end_line,omitempty"`
	Commit    *glCommit `json:"commit,omitempty"`
}

type glCommit struct {
	SHA string `json:"sha"`
}

func (g *gitlabWriter) Write(w io.Writer, res *scanners.Result) error {
	typ, schema := "sast", "sast-report-format.json"
	if g.kind == gitlabSecrets {
		typ, schema = "secret_detection", "secret-detection-report-format.json"
	}
	version := g.o.ToolVersion
	if version == "" {
		version = "dev"
	}
	tool := glTool{ID: "mlwarden", Name: "mlwarden", URL: InformationURI, Version: version, Vendor: glVendor{Name: "mlwarden"}}
	rep := glReport{
		Version: GitLabSchemaVersion,
		Schema:  "https://gitlab.com/gitlab-org/security-products/security-report-schemas/-/raw/v" + GitLabSchemaVersion + "/dist/" + schema,
		Scan: glScan{Analyzer: tool, Scanner: tool, Type: typ, Status: "success",
			StartTime: glTime(g.o.Start), EndTime: glTime(g.o.End)},
		Vulnerabilities: []glVuln{},
	}
	for _, e := range res.Errors {
		rep.Scan.Status = "failure"
		rep.Scan.Messages = append(rep.Scan.Messages, glMessage{Level: "warn", Value: "not scanned in full: " + e.Error()})
	}
	idx := ruleIndex(g.o.Rules)
	sw := &sarifWriter{o: g.o}
	kinds := map[string]scanners.TargetKind{}
	for _, t := range res.Targets {
		kinds[t.Name] = t.Kind
	}
	for _, f := range res.Findings {
		if f.Suppressed != "" || (f.Check == scanners.CheckSecrets) != (g.kind == gitlabSecrets) {
			continue
		}
		r, ok := idx[f.RuleID]
		if !ok {
			r = scanners.Rule{ID: f.RuleID, Title: f.RuleID}
		}
		file, _ := sw.uri(f, kinds[f.Target])
		v := glVuln{
			ID:          glID(f),
			Name:        clip(r.Title, 255),
			Description: clip(f.Message+glDetails(f, r), 1<<20),
			Severity:    glSeverity(f.Severity),
			Solution:    clip(r.Fix, 7000),
			Identifiers: []glIdentifier{
				{Type: "mlwarden_rule_id", Name: "mlwarden " + f.RuleID, Value: f.RuleID},
				{Type: "mlwarden_fingerprint", Name: "mlwarden fingerprint " + f.Fingerprint, Value: f.Fingerprint},
			},
			Location: glLocation{File: file},
		}
		if f.Fingerprint == "" {
			v.Identifiers = v.Identifiers[:1]
		}
		if f.Line > 0 {
			v.Location.StartLine, v.Location.EndLine = f.Line, f.Line
		}
		if g.kind == gitlabSecrets {
			// The schema wants a commit; a finding in the working tree or an
			// image has none, which GitLab's own analyzer writes as zeros.
			sha := f.Commit
			if sha == "" {
				sha = "0000000"
			}
			v.Location.Commit = &glCommit{SHA: sha}
		}
		rep.Vulnerabilities = append(rep.Vulnerabilities, v)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}

// glDetails adds where, beyond the file: the target, layer, commit and
// evidence, so that a reader of the merge request sees them.
func glDetails(f scanners.Finding, r scanners.Rule) string {
	var b strings.Builder
	if r.Why != "" {
		fmt.Fprintf(&b, "\n\n%s", r.Why)
	}
	fmt.Fprintf(&b, "\n\nTarget: %s", f.Target)
	if f.Layer != "" {
		fmt.Fprintf(&b, "\nLayer: %s", f.Layer)
	}
	if f.Commit != "" {
		fmt.Fprintf(&b, "\nCommit: %s", f.Commit)
	}
	if f.Evidence != "" {
		fmt.Fprintf(&b, "\nEvidence: %s", f.Evidence)
	}
	return b.String()
}

// glID is a stable UUID (from the target, the rule, the fingerprint and the
// line): the same finding has the same ID in every report.
func glID(f scanners.Finding) string {
	return uuid5(f.Target + "\x00" + f.RuleID + "\x00" + f.Fingerprint + "\x00" + fmt.Sprint(f.Line))
}

func glSeverity(s scanners.Severity) string {
	return [...]string{"Info", "Low", "Medium", "High", "Critical"}[s]
}

// glTime is the schema's time: UTC, to the second, no zone.
func glTime(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format("2006-01-02T15:04:05")
}

// clip shortens s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8Valid(s) {
		s = s[:len(s)-1]
	}
	return s
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }
