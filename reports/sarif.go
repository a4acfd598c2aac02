package reports

import (
	"io"
	"path"
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

// Write writes SARIF 2.1.0 as GitHub code scanning ingests it.
func (s *sarifWriter) Write(w io.Writer, res *scanners.Result) error {
	rep, err := sarif.New(sarif.Version210)
	if err != nil {
		return err
	}
	driver := sarif.NewVersionedDriver("mlwarden", s.o.ToolVersion).WithInformationURI(InformationURI)
	run := sarif.NewRun(*sarif.NewTool(driver))
	run.Tool.Driver.Rules = []*sarif.ReportingDescriptor{}

	for _, r := range usedRules(res, ruleIndex(s.o.Rules)) {
		if r.Why == "" {
			r.Why = r.Title
		}
		help := r.Why
		if r.Fix != "" {
			help += "\n\nFix: " + r.Fix
		}
		rd := sarif.NewRule(r.ID).
			WithName(ruleName(r.ID)).
			WithShortDescription(sarif.NewMultiformatMessageString(r.Title)).
			WithFullDescription(sarif.NewMultiformatMessageString(r.Why)).
			WithHelp(sarif.NewMultiformatMessageString(help)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(level(r.Severity)))
		rd.Properties = sarif.Properties{
			"tags":              []string{"security", r.Check},
			"security-severity": securitySeverity(r.Severity),
			"precision":         "high",
		}
		run.Tool.Driver.AddRule(rd)
	}

	kinds := map[string]scanners.TargetKind{}
	for _, t := range res.Targets {
		kinds[t.Name] = t.Kind
	}
	run.Results = []*sarif.Result{}
	for _, f := range res.Findings {
		r := sarif.NewRuleResult(f.RuleID).
			WithLevel(level(f.Severity)).
			WithMessage(sarif.NewTextMessage(f.Message))
		loc := sarif.NewPhysicalLocation().WithArtifactLocation(sarif.NewSimpleArtifactLocation(uri(f, kinds[f.Target])))
		if f.Line > 0 {
			loc.WithRegion(sarif.NewRegion().WithStartLine(f.Line))
		}
		r.AddLocation(sarif.NewLocationWithPhysicalLocation(loc))
		r.WithPartialFingerPrints(map[string]any{"mlwarden/v1": f.Fingerprint})
		props := sarif.Properties{"severity": f.Severity.String(), "target": f.Target}
		if f.Layer != "" {
			props["layer"] = f.Layer
		}
		if f.Commit != "" {
			props["commit"] = f.Commit
		}
		if f.Evidence != "" {
			props["evidence"] = f.Evidence
		}
		r.Properties = props
		if f.Suppressed != "" {
			kind := "external"
			if strings.HasPrefix(f.Suppressed, "inline") {
				kind = "inSource"
			}
			r.AddSuppression(sarif.NewSuppression(kind).WithJustifcation(f.Suppressed))
		}
		run.AddResult(r)
	}
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

// uri is the finding's location as code scanning wants it: a path relative
// to the repository root. For a directory target that is the target joined
// with the path; for a file target, the target itself; for images and git
// history, the path inside them.
func uri(f scanners.Finding, kind scanners.TargetKind) string {
	switch kind {
	case scanners.KindDir:
		return path.Clean(path.Join(strings.TrimPrefix(f.Target, "dir:"), f.Path))
	case scanners.KindFile, scanners.KindScript:
		return path.Clean(strings.TrimPrefix(f.Target, "file:"))
	}
	return strings.TrimPrefix(f.Path, "/")
}
