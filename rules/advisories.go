package rules

// The vulns check's table: known-vulnerable versions of the GPU and ML
// runtime stack, each row with its source.

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// AdvisoriesFile is the name of the advisory table inside a rules fs.FS.
const AdvisoriesFile = "advisories.yaml"

//go:embed advisories.yaml
var advisoriesFS embed.FS

// AdvisoriesFS returns the built-in advisory table (AdvisoriesFile).
func AdvisoriesFS() fs.FS { return advisoriesFS }

// NVIDIA packages the vulns check knows where to find (dpkg packages,
// image tags, Helm values, host facts). A row of ecosystem NVIDIA must name
// one of them.
const (
	PkgContainerToolkit = "nvidia-container-toolkit"
	PkgGPUOperator      = "gpu-operator"
	PkgDevicePlugin     = "k8s-device-plugin"
	PkgMIGManager       = "k8s-mig-manager"
	PkgDriver           = "nvidia-driver"
)

// NVIDIAPackages lists the NVIDIA packages a row may name.
func NVIDIAPackages() []string {
	return []string{PkgContainerToolkit, PkgGPUOperator, PkgDevicePlugin, PkgMIGManager, PkgDriver}
}

// Advisory statuses: how far a row's ranges were checked.
const (
	StatusConfirmed   = "confirmed"
	StatusUnconfirmed = "unconfirmed"
	StatusDisputed    = "disputed"
)

// AdvisoryTable is the parsed advisories.yaml.
type AdvisoryTable struct {
	Version    int        `yaml:"version"`
	Advisories []Advisory `yaml:"advisories"`
}

// Advisory is one vulnerability (or one NVIDIA security bulletin) and the
// versions it affects.
type Advisory struct {
	// ID is the CVE, GHSA or bulletin ID ("NVIDIA-5614"); unique.
	ID      string   `yaml:"id"`
	Aliases []string `yaml:"aliases,omitempty"`
	// Published is when the source was published (YYYY-MM-DD or YYYY-MM).
	Published string `yaml:"published,omitempty"`
	// Severity is critical, high, medium or low: from the source's CVSS
	// score (9.0+ critical, 7.0+ high, 4.0+ medium, else low).
	Severity string `yaml:"severity"`
	// CVSS is the source's base score, when it gives one.
	CVSS string `yaml:"cvss,omitempty"`
	// Impact is one line on what an attacker gets.
	Impact string `yaml:"impact"`
	// Source is the https URL the row was checked against.
	Source string `yaml:"source"`
	// Status says how far the ranges are confirmed (default confirmed); a
	// row that is not says why in Note, and findings repeat it.
	Status string `yaml:"status,omitempty"`
	// Note is a caveat shown in every finding: a condition for being
	// affected (a non-default mode), or what is not confirmed.
	Note     string     `yaml:"note,omitempty"`
	Affected []Affected `yaml:"affected"`
}

// Affected is one package's affected versions.
type Affected struct {
	Ecosystem string  `yaml:"ecosystem"`
	Package   string  `yaml:"package"`
	Ranges    []Range `yaml:"ranges"`
}

// Range is one run of affected versions, as OSV writes them: from
// Introduced (empty: from the first version) up to Fixed (excluded) or up
// to LastAffected (included); with neither, no fixed version exists.
type Range struct {
	Introduced   string `yaml:"introduced,omitempty"`
	Fixed        string `yaml:"fixed,omitempty"`
	LastAffected string `yaml:"last_affected,omitempty"`
}

// DefaultAdvisories returns the built-in table.
func DefaultAdvisories() (*AdvisoryTable, error) { return LoadAdvisories(advisoriesFS) }

// LoadAdvisories reads AdvisoriesFile from fsys (AdvisoriesFS() for the
// built-in table).
func LoadAdvisories(fsys fs.FS) (*AdvisoryTable, error) {
	b, err := fs.ReadFile(fsys, AdvisoriesFile)
	if err != nil {
		return nil, fmt.Errorf("read advisories: %w", err)
	}
	t, err := ParseAdvisories(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AdvisoriesFile, err)
	}
	return t, nil
}

var advisoryID = lazyregexp.New(`^[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)+$`)

// ParseAdvisories parses and validates an advisory table: every row has a
// unique ID, a severity, an impact, an https source and at least one
// affected package; every version is a version of its ecosystem; an
// NVIDIA row names a package the check can find; a range has at most one
// of fixed and last_affected, and its end is not below its start.
func ParseAdvisories(data []byte) (*AdvisoryTable, error) {
	var t AdvisoryTable
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("parse advisories: %w", err)
	}
	if t.Version != 1 {
		return nil, fmt.Errorf("advisories: unsupported version %d (want 1)", t.Version)
	}
	seen := map[string]bool{}
	for i := range t.Advisories {
		a := &t.Advisories[i]
		if err := a.validate(); err != nil {
			return nil, fmt.Errorf("advisories: row %d (%s): %w", i+1, a.ID, err)
		}
		if seen[a.ID] {
			return nil, fmt.Errorf("advisories: %s listed twice", a.ID)
		}
		seen[a.ID] = true
	}
	return &t, nil
}

func (a *Advisory) validate() error {
	if !advisoryID.MatchString(a.ID) {
		return fmt.Errorf("id %q is not like CVE-2024-0132 or NVIDIA-5614", a.ID)
	}
	switch a.Severity {
	case "critical", "high", "medium", "low":
	default:
		return fmt.Errorf("severity %q: want critical, high, medium or low", a.Severity)
	}
	if strings.TrimSpace(a.Impact) == "" {
		return fmt.Errorf("impact is missing")
	}
	if !strings.HasPrefix(a.Source, "https://") {
		return fmt.Errorf("source must be an https URL, got %q", a.Source)
	}
	if a.Published != "" {
		_, err1 := time.Parse(time.DateOnly, a.Published)
		_, err2 := time.Parse("2006-01", a.Published)
		if err1 != nil && err2 != nil {
			return fmt.Errorf("published %q is not YYYY-MM-DD or YYYY-MM", a.Published)
		}
	}
	switch a.Status {
	case "":
		a.Status = StatusConfirmed
	case StatusConfirmed:
	case StatusUnconfirmed, StatusDisputed:
		if strings.TrimSpace(a.Note) == "" {
			return fmt.Errorf("status %s needs a note saying what", a.Status)
		}
	default:
		return fmt.Errorf("status %q: want confirmed, unconfirmed or disputed", a.Status)
	}
	if len(a.Affected) == 0 {
		return fmt.Errorf("no affected package")
	}
	for _, af := range a.Affected {
		if err := af.validate(); err != nil {
			return fmt.Errorf("%s %s: %w", af.Ecosystem, af.Package, err)
		}
	}
	return nil
}

func (af *Affected) validate() error {
	switch af.Ecosystem {
	case EcosystemPyPI:
		if af.Package != NormalizePyPI(af.Package) || af.Package == "" {
			return fmt.Errorf("package name must be normalized (lower case, runs of -_. as -): %q", NormalizePyPI(af.Package))
		}
	case EcosystemNVIDIA:
		if !slices.Contains(NVIDIAPackages(), af.Package) {
			return fmt.Errorf("unknown NVIDIA package (known: %s)", strings.Join(NVIDIAPackages(), ", "))
		}
	default:
		return fmt.Errorf("ecosystem %q: want %s or %s", af.Ecosystem, EcosystemPyPI, EcosystemNVIDIA)
	}
	if len(af.Ranges) == 0 {
		return fmt.Errorf("no ranges")
	}
	for _, r := range af.Ranges {
		if r.Fixed != "" && r.LastAffected != "" {
			return fmt.Errorf("a range has both fixed and last_affected")
		}
		for _, v := range []string{r.Introduced, r.Fixed, r.LastAffected} {
			if v != "" && v != "0" && !ValidVersion(af.Ecosystem, v) {
				return fmt.Errorf("%q is not a %s version", v, af.Ecosystem)
			}
		}
		end := cmp.Or(r.Fixed, r.LastAffected)
		if r.Introduced != "" && r.Introduced != "0" && end != "" {
			c, _ := CompareVersions(af.Ecosystem, r.Introduced, end)
			if c > 0 || c == 0 && r.Fixed != "" {
				return fmt.Errorf("range %s..%s is empty", r.Introduced, end)
			}
		}
	}
	return nil
}

// Contains reports whether version v (of the affected package's
// ecosystem) is in the range. It fails when v is not a version.
func (r Range) Contains(eco, v string) (bool, error) {
	if r.Introduced != "" && r.Introduced != "0" {
		c, err := CompareVersions(eco, v, r.Introduced)
		if err != nil {
			return false, err
		}
		if c < 0 {
			return false, nil
		}
	} else if !ValidVersion(eco, v) {
		return false, fmt.Errorf("%q is not a %s version", v, eco)
	}
	switch {
	case r.Fixed != "":
		c, err := CompareVersions(eco, v, r.Fixed)
		return c < 0, err
	case r.LastAffected != "":
		c, err := CompareVersions(eco, v, r.LastAffected)
		return c <= 0, err
	}
	return true, nil
}

// Match returns the range of af that holds version v, if any.
func (af Affected) Match(v string) (Range, bool, error) {
	for _, r := range af.Ranges {
		ok, err := r.Contains(af.Ecosystem, v)
		if err != nil {
			return Range{}, false, err
		}
		if ok {
			return r, true, nil
		}
	}
	return Range{}, false, nil
}

// Merge returns the table with extra's rows added; a row of extra with the
// ID of a row of t replaces it.
func (t *AdvisoryTable) Merge(extra *AdvisoryTable) *AdvisoryTable {
	out := &AdvisoryTable{Version: t.Version}
	over := map[string]bool{}
	for _, a := range extra.Advisories {
		over[a.ID] = true
	}
	for _, a := range t.Advisories {
		if !over[a.ID] {
			out.Advisories = append(out.Advisories, a)
		}
	}
	out.Advisories = append(out.Advisories, extra.Advisories...)
	return out
}

// NormalizePyPI is a Python package name as PEP 503 normalizes it: lower
// case, every run of "-", "_" and "." as one "-".
func NormalizePyPI(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(strings.TrimSpace(name)) {
		if c == '-' || c == '_' || c == '.' {
			dash = true
			continue
		}
		if dash && b.Len() > 0 {
			b.WriteByte('-')
		}
		dash = false
		b.WriteRune(c)
	}
	return b.String()
}
