// Package vulns is the vulns check: known-vulnerable versions of the GPU
// and ML runtime stack — the NVIDIA Container Toolkit and libnvidia-container,
// the GPU Operator and its device plugin and MIG manager, the NVIDIA driver,
// and torch, transformers, vLLM, Ray, MLflow and Gradio — wherever a target
// declares them: dpkg databases and Python dist-info in image layers,
// requirements and lock files, Helm values, charts and Kubernetes manifests,
// and host files (`mlwarden cuda host`). Versions are judged offline
// against the sourced table in rules/advisories.yaml, which --advisories
// extends.
package vulns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
)

// Package is one installed or declared version of a package: what the
// check judges.
type Package struct {
	// Ecosystem and Name as the advisory table writes them
	// (rules.EcosystemNVIDIA and rules.PkgDriver, rules.EcosystemPyPI and
	// "torch").
	Ecosystem, Name string
	// Version is the version compared (no leading v, no image-tag suffix);
	// Raw is as written ("v1.17.3-ubuntu20.04").
	Version, Raw string
	// Line is the 1-based line it was declared at (0: the whole file).
	Line int
	// From says where it was found ("dpkg packages libnvidia-container1,
	// nvidia-container-toolkit", "image nvcr.io/nvidia/k8s/container-toolkit").
	From string
}

// Scanner is the vulns check. It is safe for concurrent use.
type Scanner struct {
	table *rules.AdvisoryTable
	// byPkg indexes the advisories by ecosystem and package.
	byPkg map[string][]entry

	mu      sync.Mutex
	targets map[string]*targetState // by target name, until FinishTarget
}

// entry is one advisory's affected package.
type entry struct {
	adv *rules.Advisory
	af  rules.Affected
}

type config struct {
	table *rules.AdvisoryTable
	files []string
}

// Option configures the vulns check.
type Option func(*config)

// WithAdvisoriesFile adds the rows of an advisory file (the schema of
// rules/advisories.yaml) to the table; a row with the ID of a built-in row
// replaces it.
func WithAdvisoriesFile(path string) Option {
	return func(c *config) { c.files = append(c.files, path) }
}

// WithTable uses t instead of the built-in table (files given with
// WithAdvisoriesFile still extend it).
func WithTable(t *rules.AdvisoryTable) Option {
	return func(c *config) { c.table = t }
}

// New returns the vulns check. A table or advisory file that does not
// parse is an error.
func New(opts ...Option) (*Scanner, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	t := c.table
	if t == nil {
		var err error
		if t, err = rules.DefaultAdvisories(); err != nil {
			return nil, fmt.Errorf("vulns check: %w", err)
		}
	}
	for _, f := range c.files {
		extra, err := loadFile(f)
		if err != nil {
			return nil, fmt.Errorf("vulns check: %w", err)
		}
		t = t.Merge(extra)
	}
	s := &Scanner{table: t, byPkg: map[string][]entry{}, targets: map[string]*targetState{}}
	for i := range t.Advisories {
		a := &t.Advisories[i]
		for _, af := range a.Affected {
			k := af.Ecosystem + "/" + af.Package
			s.byPkg[k] = append(s.byPkg[k], entry{adv: a, af: af})
		}
	}
	return s, nil
}

// Table returns the advisory table in use.
func (s *Scanner) Table() *rules.AdvisoryTable { return s.table }

// Check names the check.
func (s *Scanner) Check() string { return scanners.CheckVulns }

// Scan reads the package versions one artifact declares and reports those
// an advisory affects.
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	k := classify(a.Path)
	if k == kindNone {
		return nil, nil
	}
	limit := int64(maxText)
	if k == kindDistInfo {
		limit = maxMetadata
	}
	data, truncated, err := scanners.ReadAll(c, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", a.Path, err)
	}
	var out []scanners.Finding
	if truncated && k != kindDistInfo {
		out = append(out, scanners.At(a, ruleByID(RuleNotScanned), 0,
			fmt.Sprintf("only the first %d bytes of this %d-byte file were checked for vulnerable versions", limit, c.Size())))
	}
	if k == kindPython {
		keep(ctx, nil, s.noteLoads(a, data))
		return out, nil
	}
	pkgs := extract(k, a, data)
	found, torch := s.judge(a, pkgs)
	keep(ctx, torch, nil)
	out = append(out, found...)
	return out, nil
}

// Judge returns the findings for packages declared in artifact a.
func (s *Scanner) Judge(a *scanners.Artifact, pkgs []Package) []scanners.Finding {
	out, _ := s.judge(a, pkgs)
	return out
}

// judge returns the findings for packages declared in a, and the affected
// torch release it noted for FinishTarget, if any.
func (s *Scanner) judge(a *scanners.Artifact, pkgs []Package) ([]scanners.Finding, *place) {
	var out []scanners.Finding
	var torch *place
	for _, p := range pkgs {
		for _, e := range s.byPkg[p.Ecosystem+"/"+p.Name] {
			r, hit, err := e.af.Match(p.Version)
			if err != nil || !hit {
				continue // a version the ecosystem cannot order is not judged
			}
			out = append(out, s.finding(a, p, e.adv, r))
			if p.Name == "torch" && p.Ecosystem == rules.EcosystemPyPI && isWeightsOnlyBypass(e.adv) && torch == nil {
				torch = s.noteTorch(a, p)
			}
		}
		if p.Ecosystem == rules.EcosystemNVIDIA && p.Name == rules.PkgDriver {
			if f, ok := s.unsupportedBranch(a, p); ok {
				out = append(out, f)
			}
		}
	}
	return out, torch
}

// isWeightsOnlyBypass reports whether an advisory is CVE-2025-32434,
// the one that makes torch.load(weights_only=True) unsafe.
func isWeightsOnlyBypass(a *rules.Advisory) bool {
	return a.ID == cveWeightsOnly || slices.Contains(a.Aliases, cveWeightsOnly)
}

const cveWeightsOnly = "CVE-2025-32434"

func ruleFor(p Package) scanners.Rule {
	switch {
	case p.Ecosystem == rules.EcosystemPyPI:
		return ruleByID(RulePythonPackage)
	case p.Name == rules.PkgContainerToolkit:
		return ruleByID(RuleContainerToolkit)
	case p.Name == rules.PkgDriver:
		return ruleByID(RuleGPUDriver)
	}
	return ruleByID(RuleGPUOperator)
}

// displayName names a package in messages.
func displayName(p Package) string {
	switch p.Name {
	case rules.PkgContainerToolkit:
		return "NVIDIA Container Toolkit"
	case rules.PkgGPUOperator:
		return "NVIDIA GPU Operator"
	case rules.PkgDevicePlugin:
		return "NVIDIA device plugin"
	case rules.PkgMIGManager:
		return "NVIDIA MIG manager"
	case rules.PkgDriver:
		return "NVIDIA driver"
	}
	return p.Name
}

func severityOf(a *rules.Advisory) scanners.Severity {
	sev, err := scanners.ParseSeverity(a.Severity)
	if err != nil {
		return scanners.SeverityHigh // the loader validated it
	}
	return sev
}

func (s *Scanner) finding(a *scanners.Artifact, p Package, adv *rules.Advisory, r rules.Range) scanners.Finding {
	rule := ruleFor(p)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s) is affected by %s", displayName(p), p.Raw, p.From, adv.ID)
	if len(adv.Aliases) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(adv.Aliases, ", "))
	}
	fmt.Fprintf(&b, ", %s", adv.Severity)
	if adv.CVSS != "" {
		fmt.Fprintf(&b, " (CVSS %s)", adv.CVSS)
	}
	fmt.Fprintf(&b, ": %s. ", adv.Impact)
	switch {
	case r.Fixed != "" && p.Name == rules.PkgDriver:
		fmt.Fprintf(&b, "Fixed in %s for branch R%s", r.Fixed, branchOf(p.Version))
	case r.Fixed != "":
		fmt.Fprintf(&b, "Fixed in %s", r.Fixed)
	case r.LastAffected != "":
		fmt.Fprintf(&b, "Affected up to %s; the first later release is fixed", r.LastAffected)
	default:
		b.WriteString("No fixed version is known")
	}
	if others := otherFixes(adv, p.Name); others != "" {
		fmt.Fprintf(&b, " (%s)", others)
	}
	b.WriteString(".")
	switch adv.Status {
	case rules.StatusUnconfirmed:
		fmt.Fprintf(&b, " Range not confirmed: %s.", adv.Note)
	case rules.StatusDisputed:
		fmt.Fprintf(&b, " Disputed: %s.", adv.Note)
	default:
		if adv.Note != "" {
			fmt.Fprintf(&b, " Note: %s.", adv.Note)
		}
	}
	fmt.Fprintf(&b, " Source: %s. Fix: %s", adv.Source, rule.Fix)
	f := scanners.At(a, rule, p.Line, b.String())
	f.Severity = severityOf(adv)
	f.Evidence = clip(p.Name+" "+p.Raw, 120)
	f.Vulnerability = &scanners.Vulnerability{ID: adv.ID, Aliases: slices.Clone(adv.Aliases), PURL: PURL(p)}
	return f
}

// PURL is a package's package URL, what VEX statements name it by:
// pkg:pypi/NAME@VERSION for PyPI, pkg:generic/nvidia/NAME@VERSION for the
// NVIDIA stack (NAME as rules.Pkg* writes it: nvidia-container-toolkit,
// gpu-operator, nvidia-driver, …), whose packages come from dpkg databases, image
// tags and Helm values alike, so that no one ecosystem's type fits them.
func PURL(p Package) string {
	name := strings.ToLower(p.Name)
	if p.Ecosystem == rules.EcosystemPyPI {
		return "pkg:pypi/" + name + "@" + p.Version
	}
	return "pkg:generic/nvidia/" + name + "@" + p.Version
}

// otherFixes names the fixed versions of the advisory's other packages
// ("GPU Operator 24.6.2"), so that a toolkit finding says which operator
// release carries the fix.
func otherFixes(adv *rules.Advisory, pkg string) string {
	var parts []string
	for _, af := range adv.Affected {
		if af.Package == pkg || af.Ecosystem != rules.EcosystemNVIDIA {
			continue
		}
		for _, r := range af.Ranges {
			if r.Fixed != "" {
				parts = append(parts, displayName(Package{Name: af.Package})+" "+r.Fixed)
				break
			}
		}
	}
	return strings.Join(parts, ", ")
}

// branchOf is a driver version's branch: its first component.
func branchOf(v string) string {
	b, _, _ := strings.Cut(v, ".")
	return b
}

// maxListed bounds the bulletins a branch finding names.
const maxListed = 3

// unsupportedBranch reports a driver whose branch a bulletin skips: one
// that lists both older and newer branches, or only newer ones, but not
// this one, so it names no fixed version for it.
func (s *Scanner) unsupportedBranch(a *scanners.Artifact, p Package) (scanners.Finding, bool) {
	br := branchOf(p.Version)
	var skipped []*rules.Advisory
	for _, e := range s.byPkg[rules.EcosystemNVIDIA+"/"+rules.PkgDriver] {
		listed, newer := false, false
		for _, r := range e.af.Ranges {
			rb := branchOf(r.Introduced)
			if rb == br {
				listed = true
			}
			if c, err := rules.CompareVersions(rules.EcosystemNVIDIA, rb, br); err == nil && c > 0 {
				newer = true
			}
		}
		if !listed && newer {
			skipped = append(skipped, e.adv)
		}
	}
	if len(skipped) == 0 {
		return scanners.Finding{}, false
	}
	// Newest first.
	slices.SortStableFunc(skipped, func(x, y *rules.Advisory) int { return strings.Compare(y.Published, x.Published) })
	ids := make([]string, 0, maxListed)
	for i, adv := range skipped {
		if i == maxListed {
			ids = append(ids, fmt.Sprintf("%d more", len(skipped)-maxListed))
			break
		}
		ids = append(ids, adv.ID)
	}
	newest := skipped[0]
	var fixes []string
	for _, af := range newest.Affected {
		if af.Package != rules.PkgDriver {
			continue
		}
		for _, r := range af.Ranges {
			if r.Fixed != "" {
				fixes = append(fixes, fmt.Sprintf("R%s %s or later", branchOf(r.Introduced), r.Fixed))
			}
		}
	}
	worst := scanners.SeverityInfo
	for _, adv := range skipped {
		worst = max(worst, severityOf(adv))
	}
	rule := ruleByID(RuleDriverUnsupported)
	msg := fmt.Sprintf("%s %s (%s) is in branch R%s, which %d of NVIDIA's security bulletins skip (%s; rated up to %s) although they fix other branches: they name no fixed version for R%s, so what they fix may be open on it. %s (%s) fixes %s. Fix: %s",
		displayName(p), p.Raw, p.From, br, len(skipped), strings.Join(ids, ", "), worst, br, newest.ID, newest.Source, strings.Join(fixes, ", "), rule.Fix)
	f := scanners.At(a, rule, p.Line, msg)
	f.Evidence = clip(p.Name+" "+p.Raw, 120)
	return f, true
}

// clip bounds evidence to n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// loadFile reads an advisory file a user gave.
func loadFile(path string) (*rules.AdvisoryTable, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read advisories %s: %w", path, err)
	}
	t, err := rules.ParseAdvisories(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
