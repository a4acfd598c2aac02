package reports

import (
	"io"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/owenrumney/go-sarif/v2/sarif"

	"github.com/mlwarden/mlwarden/scanners"
)

// InformationURI is the project's home, written into SARIF.
const InformationURI = "https://github.com/mlwarden/mlwarden"

type sarifWriter struct{ o Options }

// level maps a severity to SARIF's result level.
func level(s scanners.Severity) string {
	switch s {
	case scanners.SeverityCritical, scanners.SeverityHigh:
		return "error"
	case scanners.SeverityMedium:
		return "warning"
	}
	return "note"
}

// securitySeverity is GitHub code scanning's numeric severity (CVSS-like).
func securitySeverity(s scanners.Severity) string {
	return [...]string{"1.0", "3.0", "5.5", "8.0", "9.5"}[s]
}

// sarifRoot is the uriBaseId of locations in local targets: the directory
// mlwarden ran in.
const sarifRoot = "%SRCROOT%"

// Write writes SARIF 2.1.0 as GitHub code scanning ingests it.
//
// GitHub takes the severity it shows from the rule descriptor's
// security-severity (a result cannot override it), so a finding whose
// severity differs from its rule's default is given a descriptor of its
// own: rule ID + "/" + severity ("pins/image-not-digest/info", a
// hierarchical sub-ID of the rule, as SARIF allows), whose
// properties.rule_id is the mlwarden rule ID. Every result has a region
// (line 1 for findings about a whole file, a binary or a directory), a URI
// relative to %SRCROOT% (the working directory, in originalUriBaseIds) for
// local targets, and partialFingerprints.mlwarden/v1 (the finding's
// fingerprint, distinct for repeats). Locations inside images and Hub
// repositories, which are not in the checkout, also carry
// primaryLocationLineHash, which upload-sarif cannot compute for them.
func (s *sarifWriter) Write(w io.Writer, res *scanners.Result) error {
	rep, err := sarif.New(sarif.Version210)
	if err != nil {
		return err
	}
	driver := sarif.NewVersionedDriver("mlwarden", s.o.ToolVersion).WithInformationURI(InformationURI)
	run := sarif.NewRun(*sarif.NewTool(driver))
	run.Tool.Driver.Rules = []*sarif.ReportingDescriptor{}

	idx := ruleIndex(s.o.Rules)
	index := map[string]uint{} // descriptor ID → index
	for _, r := range usedRules(res, idx) {
		for _, sev := range severitiesOf(res, r) {
			id := descriptorID(r, sev)
			index[id] = uint(len(run.Tool.Driver.Rules))
			run.Tool.Driver.AddRule(descriptor(r, id, sev))
		}
	}

	kinds := map[string]scanners.TargetKind{}
	for _, t := range res.Targets {
		kinds[t.Name] = t.Kind
	}
	local := false
	run.Results = []*sarif.Result{}
	for _, f := range res.Findings {
		r, ok := idx[f.RuleID]
		if !ok {
			r = scanners.Rule{ID: f.RuleID, Severity: f.Severity}
		}
		id := descriptorID(r, f.Severity)
		sr := sarif.NewRuleResult(id).
			WithLevel(level(f.Severity)).
			WithMessage(sarif.NewTextMessage(f.Message))
		i := index[id]
		sr.RuleIndex = &i
		kind := kinds[f.Target]
		u, base := s.uri(f, kind)
		al := sarif.NewSimpleArtifactLocation(u)
		if base != "" {
			al.WithUriBaseId(base)
			local = true
		}
		line := max(f.Line, 1) // a whole file, a binary, a directory: line 1
		loc := sarif.NewPhysicalLocation().WithArtifactLocation(al).WithRegion(sarif.NewRegion().WithStartLine(line))
		sr.AddLocation(sarif.NewLocationWithPhysicalLocation(loc))
		fps := map[string]any{"mlwarden/v1": f.Fingerprint}
		if kind == scanners.KindImage || kind == scanners.KindHub {
			fps["primaryLocationLineHash"] = f.Fingerprint
		}
		sr.WithPartialFingerPrints(fps)
		props := sarif.Properties{"severity": f.Severity.String(), "target": f.Target, "rule_id": f.RuleID}
		if f.Layer != "" {
			props["layer"] = f.Layer
		}
		if f.Commit != "" {
			props["commit"] = f.Commit
		}
		if f.Evidence != "" {
			props["evidence"] = f.Evidence
		}
		if f.Verification != "" {
			props["verification"] = f.Verification
		}
		sr.Properties = props
		if f.Suppressed != "" {
			how := "external"
			if strings.HasPrefix(f.Suppressed, "inline") {
				how = "inSource"
			}
			// Every field set: go-sarif writes an unset one as null, which the
			// schema refuses.
			sr.AddSuppression(sarif.NewSuppression(how).WithJustifcation(f.Suppressed).WithStatus("accepted").
				WithGuid(suppressionGUID(f)).WithLocation(sarif.NewLocationWithPhysicalLocation(loc)))
		}
		run.AddResult(sr)
	}
	if local {
		root := sarif.NewArtifactLocation().WithDescriptionText("The directory mlwarden ran in; local targets' paths are relative to it.")
		if s.o.SourceRoot != "" {
			root.WithUri(fileURI(s.o.SourceRoot))
		}
		run.OriginalUriBaseIDs = map[string]*sarif.ArtifactLocation{sarifRoot: root}
	}
	for _, t := range res.Targets {
		if v := t.VCS; v != nil && v.RepositoryURI != "" {
			run.AddVersionControlProvenance(vcsDetails(t.Name, v))
		}
	}
	cat := s.o.Category
	if cat == "" {
		cat = "mlwarden/"
	}
	run.AutomationDetails = sarif.NewRunAutomationDetails()
	run.AutomationDetails.ID = &cat
	ok := len(res.Errors) == 0
	inv := run.AddInvocation(ok)
	for _, e := range res.Errors {
		n := sarif.NewNotification()
		n.Level = "error"
		n.Message = sarif.NewTextMessage(e.Error())
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, n)
	}
	rep.AddRun(run)
	return rep.PrettyWrite(w)
}

// vcsDetails is a target's versionControlProvenance: the repository, the
// revision and branch scanned, and (as properties) the target and the
// scope when the scan was not of the whole (--since-commit, --staged,
// --new-only).
func vcsDetails(target string, v *scanners.VCS) *sarif.VersionControlDetails {
	d := sarif.NewVersionControlDetails().WithRepositoryURI(v.RepositoryURI)
	if v.Revision != "" {
		d.WithRevisionID(v.Revision)
	}
	if v.Branch != "" {
		d.WithBranch(v.Branch)
	}
	d.Properties = sarif.Properties{"target": target}
	if v.Scope != "" {
		d.Properties["scope"] = v.Scope
	}
	return d
}

// severitiesOf lists the severities r's findings have, the rule's default
// first when any finding has it.
func severitiesOf(res *scanners.Result, r scanners.Rule) []scanners.Severity {
	var out []scanners.Severity
	for _, sev := range append([]scanners.Severity{r.Severity}, scanners.Severities()...) {
		if slices.Contains(out, sev) {
			continue
		}
		for _, f := range res.Findings {
			if f.RuleID == r.ID && f.Severity == sev {
				out = append(out, sev)
				break
			}
		}
	}
	return out
}

// descriptorID is the SARIF rule ID for findings of r at sev: the rule ID at
// its default severity, else a sub-ID naming the severity.
func descriptorID(r scanners.Rule, sev scanners.Severity) string {
	if sev == r.Severity {
		return r.ID
	}
	return r.ID + "/" + sev.String()
}

func descriptor(r scanners.Rule, id string, sev scanners.Severity) *sarif.ReportingDescriptor {
	if r.Title == "" {
		r.Title = r.ID
	}
	if r.Why == "" {
		r.Why = r.Title
	}
	help := r.Why
	if r.Fix != "" {
		help += "\n\nFix: " + r.Fix
	}
	title := r.Title
	if id != r.ID {
		title += " (" + sev.String() + ")"
	}
	rd := sarif.NewRule(id).
		WithName(ruleName(id)).
		WithShortDescription(sarif.NewMultiformatMessageString(title)).
		WithFullDescription(sarif.NewMultiformatMessageString(r.Why)).
		WithHelp(sarif.NewMultiformatMessageString(help)).
		WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(level(sev)))
	rd.Properties = sarif.Properties{
		"tags":              []string{"security", r.Check},
		"security-severity": securitySeverity(sev),
		"precision":         "high",
	}
	if id != r.ID {
		rd.Properties["rule_id"] = r.ID
	}
	return rd
}

// suppressionGUID is a stable GUID for f's suppression.
func suppressionGUID(f scanners.Finding) string {
	return uuid5("suppression\x00" + f.Target + "\x00" + f.Fingerprint)
}

// fileURI is an absolute path as a file URI, ending with a slash.
func fileURI(dir string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}
	s := u.String()
	if !strings.HasSuffix(s, "/") {
		s += "/"
	}
	return s
}

// ruleName turns "secrets/huggingface-token" into "SecretsHuggingfaceToken",
// the PascalCase name SARIF viewers show.
func ruleName(id string) string {
	var b strings.Builder
	up := true
	for _, r := range id {
		if r == '/' || r == '-' || r == '_' || r == '.' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

// uri is the finding's location as code scanning wants it, and its
// uriBaseId: for local targets a path relative to the directory mlwarden ran
// in (%SRCROOT%): a directory target joined with the path, a file target
// itself, a repository's path; an absolute path outside it is a file URI
// with no base. For images and Hub repositories, the path inside them, with
// no base: they are not in the checkout.
func (s *sarifWriter) uri(f scanners.Finding, kind scanners.TargetKind) (string, string) {
	var p string
	switch kind {
	case scanners.KindDir:
		p = path.Clean(path.Join(strings.TrimPrefix(f.Target, "dir:"), f.Path))
	case scanners.KindFile, scanners.KindScript:
		p = path.Clean(strings.TrimPrefix(f.Target, "file:"))
	case scanners.KindRepo:
		p = strings.TrimPrefix(f.Path, "/")
	default:
		return strings.TrimPrefix(f.Path, "/"), ""
	}
	if path.IsAbs(p) {
		root := filepath.ToSlash(s.o.SourceRoot)
		if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/"); ok && root != "" {
			return rel, sarifRoot
		}
		return fileURI(p)[:len(fileURI(p))-1], ""
	}
	return p, sarifRoot
}
