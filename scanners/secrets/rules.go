package secrets

import (
	"sort"
	"strings"
	"sync"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// ruleTooLarge is reported when a text artifact is larger than the scan limit.
var ruleTooLarge = scanners.Rule{
	ID:       "secrets/file-too-large",
	Check:    scanners.CheckSecrets,
	Severity: scanners.SeverityLow,
	Title:    "Text file only partly scanned for secrets",
	Why:      "Content past the scan limit is not searched, so a credential there would be missed.",
	Fix:      "Keep logs and data dumps out of the scanned target, split the file, or raise the limit.",
}

// RuleArchiveNotScanned is reported, through the archive reader of the
// text checks (scanners/archive), for an archive or a member that was not
// scanned: over a limit (the run also exits 2), encrypted, corrupt or in an
// unsupported format.
var RuleArchiveNotScanned = scanners.Rule{
	ID:       "secrets/archive-not-scanned",
	Check:    scanners.CheckSecrets,
	Severity: scanners.SeverityLow,
	Title:    "Archive or archive member not scanned for secrets",
	Why:      "Content the scan could not read (past a limit, encrypted, corrupt or unsupported) may hold credentials that nothing reported.",
	Fix:      "Unpack the archive and scan its content, raise --max-archive-depth if it is nested deeper, or keep archives that cannot be read out of the target.",
}

// RuleArchiveMemberEscapes is reported for an archive member whose name
// leads out of the directory the archive is extracted to, when the models
// check (which reports it for every archive it opens) is not running.
var RuleArchiveMemberEscapes = scanners.Rule{
	ID:       "secrets/archive-member-escapes",
	Check:    scanners.CheckSecrets,
	Severity: scanners.SeverityMedium,
	Title:    "Archive member name leads out of the extraction directory",
	Why:      "Extracting the archive writes the member elsewhere (zip slip: ../ or an absolute path), over files such as shell profiles, cron jobs or credentials.",
	Fix:      "Re-create the archive with relative member names, and extract untrusted archives with a tool that refuses such names.",
}

const (
	defaultWhy = "A leaked credential lets anyone who can read the file, image or repository act as its owner, on paid GPU, model and data services."
	defaultFix = "Revoke the credential with its issuer, remove it from the file and from history (a new commit does not remove it), and load it at run time from the environment or a secret store."
)

// builtinDetector is the detector over the built-in rules, shared by every
// Scanner in the process: it holds the compiled config and the keyword
// prefilter, and DetectContext only reads them.
var builtinDetector = func() func(*ruleSet) *engine.Detector {
	var once sync.Once
	var d *engine.Detector
	return func(rs *ruleSet) *engine.Detector {
		once.Do(func() { d = newDetector(rs) })
		return d
	}
}()

// builtinPlain is the built-in rules' detector without decoding passes,
// shared the same way and built on first use.
var builtinPlain = func() func(*ruleSet) func() fragmentDetector {
	var once sync.Once
	var get func() fragmentDetector
	return func(rs *ruleSet) func() fragmentDetector {
		once.Do(func() { get = plainDetector(rs, true) })
		return get
	}
}()

// ruleName returns mlwarden's name for a gitleaks rule id.
func (rs *ruleSet) ruleName(id string) string {
	if n, ok := rs.meta().Names[id]; ok {
		return n
	}
	return id
}

// describe lists the rules of rs as mlwarden rules, sorted by ID, and indexes
// them by gitleaks rule id.
func describe(rs *ruleSet) ([]scanners.Rule, map[string]scanners.Rule) {
	byID := make(map[string]scanners.Rule, len(rs.cfg.Rules))
	list := make([]scanners.Rule, 0, len(rs.cfg.Rules)+1)
	for id, r := range rs.cfg.Rules {
		if r.SkipReport {
			continue
		}
		mr := describeRule(rs, id, r.Description)
		byID[id] = mr
		list = append(list, mr)
	}
	list = append(list, ruleTooLarge, RuleArchiveNotScanned, RuleArchiveMemberEscapes)
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list, byID
}

func describeRule(rs *ruleSet, id, description string) scanners.Rule {
	sev := scanners.SeverityHigh
	if name, ok := rs.meta().Severity[id]; ok {
		if v, err := scanners.ParseSeverity(name); err == nil {
			sev = v
		}
	}
	title, why := splitDescription(description)
	return scanners.Rule{
		ID:       scanners.CheckSecrets + "/" + rs.ruleName(id),
		Check:    scanners.CheckSecrets,
		Severity: sev,
		Title:    title,
		Why:      why,
		Fix:      fixOf(rs, id),
	}
}

// splitDescription turns gitleaks' one-sentence descriptions ("Identified a
// Slack token, which may compromise ...") into a title and a why.
func splitDescription(d string) (title, why string) {
	d = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(d), "."))
	if d == "" {
		return "Leaked credential", defaultWhy
	}
	if t, rest, ok := strings.Cut(d, ", "); ok {
		rest = strings.TrimPrefix(rest, "which ")
		rest = strings.TrimPrefix(rest, "potentially ")
		return t, "Left in place it " + rest + "; " + lowerFirst(defaultWhy)
	}
	return d, defaultWhy
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func titleOf(r scanners.Rule) string {
	if r.Title == "" {
		return "Leaked credential"
	}
	return r.Title
}

func fixOf(rs *ruleSet, id string) string {
	if f, ok := rs.meta().Fix[id]; ok {
		return f
	}
	return defaultFix
}
