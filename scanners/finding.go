package scanners

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/sync/errgroup"
)

// Severity orders findings. The zero value is SeverityInfo.
type Severity int

// Severities, lowest first.
const (
	SeverityInfo Severity = iota
	SeverityLow
	SeverityMedium
	SeverityHigh
	SeverityCritical
)

var severityNames = [...]string{"info", "low", "medium", "high", "critical"}

// Severities lists every severity, highest first, as reports show them.
func Severities() []Severity {
	return []Severity{SeverityCritical, SeverityHigh, SeverityMedium, SeverityLow, SeverityInfo}
}

func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity reads a severity name, case-insensitively. "none" is not a
// severity; callers that accept it handle it themselves.
func ParseSeverity(s string) (Severity, error) {
	for i, n := range severityNames {
		if strings.EqualFold(s, n) {
			return Severity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (valid: %s)", s, strings.Join(severityNames[:], ", "))
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) {
	if s < 0 || int(s) >= len(severityNames) {
		return nil, fmt.Errorf("invalid severity %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Rule describes one rule a check can report. `mlwarden rules` lists them and
// SARIF writes them as tool.driver.rules.
type Rule struct {
	ID       string   `json:"id"`
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	Title    string   `json:"title"`
	// Why is one line on why it matters.
	Why string `json:"why"`
	// Fix is one line on how to fix it.
	Fix string `json:"fix,omitempty"`
}

// Finding is one problem found in one place. The JSON field names are the
// report contract in docs/architecture.md.
type Finding struct {
	RuleID   string   `json:"rule_id"`
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	// Message says what, why it matters and how to fix it. It never holds a
	// secret's value.
	Message string `json:"message"`
	Target  string `json:"target"`
	Path    string `json:"path,omitempty"`
	// Line is 1-based; 0 means the finding is about the whole artifact.
	Line   int    `json:"line,omitempty"`
	Layer  string `json:"layer,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Evidence shows what was matched, redacted for secrets (a prefix and a
	// suffix at most).
	Evidence string `json:"evidence,omitempty"`
	// Fingerprint is a stable id for baselines and ignore entries. The
	// dispatcher fills it when the scanner leaves it empty.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Suppressed is set (with the reason) when an ignore entry, an inline
	// comment or the baseline matched. Suppressed findings are counted, not
	// shown as failures.
	Suppressed string `json:"suppressed,omitempty"`
	// Verification is what asking the provider said of a secret finding
	// (--verify-secrets): VerificationLive, VerificationRevoked or
	// VerificationUnknown; empty when nobody asked.
	Verification string `json:"verification,omitempty"`
	// Vulnerability is, for a vulns finding, the advisory and the package
	// it is about: what VEX statements are matched against.
	Vulnerability *Vulnerability `json:"vulnerability,omitempty"`
	// Justification is, for a finding suppressed by a VEX statement or by
	// an ignore entry that gives one, the OpenVEX justification
	// (component_not_present, vulnerable_code_not_present, …; "fixed" for
	// a statement of status fixed).
	Justification string `json:"justification,omitempty"`

	// Secret, when set by a scanner, goes into the fingerprint in place of
	// the evidence, through SecretKey (never as it is), and is never written
	// anywhere.
	Secret string `json:"-"`
}

// Vulnerability names what a vulns finding is about: the advisory (ID and
// aliases) and the affected package as a package URL
// (pkg:pypi/torch@2.5.1).
type Vulnerability struct {
	ID      string   `json:"id"`
	Aliases []string `json:"aliases,omitempty"`
	PURL    string   `json:"purl"`
}

// The values of Finding.Verification (part of the JSON report).
const (
	// VerificationLive: the provider accepted the credential.
	VerificationLive = "live"
	// VerificationRevoked: the provider refused it as invalid or revoked.
	VerificationRevoked = "revoked"
	// VerificationUnknown: asked, but no answer said either (rate limit,
	// time-out, a provider error).
	VerificationUnknown = "unknown"
)

// At returns a finding for rule r located at artifact a and 1-based content
// line (0 for the whole artifact). It maps the line through a.Lines and copies
// the artifact's origin and note.
func At(a *Artifact, r Rule, line int, message string) Finding {
	if a.Note != "" {
		message += " (" + a.Note + ")"
	}
	return Finding{
		RuleID:   r.ID,
		Check:    r.Check,
		Severity: r.Severity,
		Message:  message,
		Target:   a.Target,
		Path:     a.Path,
		Line:     a.OriginalLine(line),
		Layer:    a.Layer,
		Commit:   a.Commit,
	}
}

// ComputeFingerprint returns a stable id for f: a hash of the rule, the place
// (target-independent path, layer, commit) and what was matched. It leaves the
// line out so that a finding keeps its fingerprint when lines above it move.
//
// A secret is never hashed as it is: what was matched is then
// SecretKey(rule, secret), a slow, memory-hard derivation, so that a report's
// fingerprint does not let anyone confirm a guessed low-entropy secret at the
// speed of SHA-256 (docs/design/secrets.md has the trade-off and the cost).
func ComputeFingerprint(f *Finding) string {
	if f.Secret != "" {
		return fingerprintOf(f, hex.EncodeToString(SecretKey(f.RuleID, f.Secret)))
	}
	return fingerprintOf(f, f.Evidence)
}

// fingerprintOf hashes the rule, the place, key (the evidence, or a secret's
// SecretKey) and the message.
func fingerprintOf(f *Finding, key string) string {
	h := sha256.New()
	for _, s := range []string{f.RuleID, f.Path, f.Layer, f.Commit, key, f.Message} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:32]
}

// The parameters of SecretKey: Argon2id (RFC 9106) with one pass over 2 MiB,
// one lane, a 32-byte key, and a fixed public salt, so that fingerprints are
// the same on every machine and in every run (baselines and ignore entries
// keep matching) while each guess at a secret costs an attacker what it
// costs us: about 2 ms of a core and 2 MiB of memory (BenchmarkSecretKey on
// the 2-core CI machine; SHA-256 costs about 0.5 µs a guess, and much less
// on a GPU, where memory-hard Argon2 gains little). Changing any of them
// changes every secrets fingerprint.
const (
	SecretKeySalt    = "mlwarden/fingerprint/v2"
	SecretKeyTime    = 1
	SecretKeyMemory  = 2 << 10 // KiB
	SecretKeyThreads = 1
)

// SecretKey derives, from a rule ID and a secret, the 32 bytes a finding's
// fingerprint hashes in the secret's place (Argon2id with the SecretKey*
// parameters).
func SecretKey(rule, secret string) []byte {
	return argon2.IDKey([]byte(rule+"\x00"+secret), []byte(SecretKeySalt), SecretKeyTime, SecretKeyMemory, SecretKeyThreads, 32)
}

// LegacyFingerprint is the fingerprint f had before SecretKey: SHA-256 over
// the raw secret. It is never written anywhere; suppress computes it, while a
// finding's secret is still in memory, to match baselines and ignore entries
// written by earlier versions.
func LegacyFingerprint(f *Finding) string {
	if f.Secret == "" {
		return fingerprintOf(f, f.Evidence)
	}
	return fingerprintOf(f, f.Secret)
}

// FingerprintAll fills the empty fingerprints of fs, deriving each distinct
// secret's key once and up to workers keys at once.
func FingerprintAll(fs []Finding, workers int) {
	type secret struct{ rule, value string }
	keys := map[secret]string{}
	for _, f := range fs {
		if f.Fingerprint == "" && f.Secret != "" {
			keys[secret{f.RuleID, f.Secret}] = ""
		}
	}
	todo := make([]secret, 0, len(keys))
	for k := range keys {
		todo = append(todo, k)
	}
	out := make([]string, len(todo))
	var g errgroup.Group
	g.SetLimit(max(workers, 1))
	for i, k := range todo {
		g.Go(func() error {
			out[i] = hex.EncodeToString(SecretKey(k.rule, k.value))
			return nil
		})
	}
	_ = g.Wait()
	for i, k := range todo {
		keys[k] = out[i]
	}
	for i := range fs {
		f := &fs[i]
		switch {
		case f.Fingerprint != "":
		case f.Secret != "":
			f.Fingerprint = fingerprintOf(f, keys[secret{f.RuleID, f.Secret}])
		default:
			f.Fingerprint = fingerprintOf(f, f.Evidence)
		}
	}
}

// OccurrenceFingerprint is the fingerprint of the n-th repeat (n >= 1, in
// line order) of a finding whose ComputeFingerprint is base, in one target:
// nine identical torch.load calls in one file are nine findings with nine
// fingerprints, which keep apart in code scanning and baselines, while the
// first occurrence, like every finding that is not repeated, keeps base.
// Edits elsewhere in the file change none of them; inserting another
// identical finding above shifts the repeats below it.
func OccurrenceFingerprint(base string, n int) string {
	if n <= 0 {
		return base
	}
	h := sha256.Sum256([]byte(base + "\x00occurrence\x00" + strconv.Itoa(n)))
	return "sha256:" + hex.EncodeToString(h[:])[:32]
}

// Redact shows at most the first 4 and last 2 characters of a secret, and less
// of a short one, joined by an ellipsis.
func Redact(secret string) string {
	r := []rune(secret)
	switch {
	case len(r) >= 12:
		return string(r[:4]) + "…" + string(r[len(r)-2:])
	case len(r) >= 6:
		return string(r[:2]) + "…"
	default:
		return "…"
	}
}

// Error is a target or a file that could not be scanned in full. Any error
// makes the run exit 2.
type Error struct {
	Target  string `json:"target"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func (e Error) Error() string {
	switch {
	case e.Path != "":
		return fmt.Sprintf("%s: %s: %s", e.Target, e.Path, e.Message)
	case e.Target != "":
		return fmt.Sprintf("%s: %s", e.Target, e.Message)
	}
	return e.Message
}

// Summary counts findings by severity. Suppressed findings are counted apart.
type Summary struct {
	Critical   int `json:"critical"`
	High       int `json:"high"`
	Medium     int `json:"medium"`
	Low        int `json:"low"`
	Info       int `json:"info"`
	Suppressed int `json:"suppressed,omitempty"`
	// Hidden counts findings left out of the report by --severity (they are
	// in no other count).
	Hidden int `json:"hidden,omitempty"`
	// PresentBefore counts findings left out of the report by --new-only
	// because they were already present at its REF (in no other count).
	PresentBefore int `json:"present_before,omitempty"`
}

// Add counts one finding.
func (s *Summary) Add(f Finding) {
	if f.Suppressed != "" {
		s.Suppressed++
		return
	}
	switch f.Severity {
	case SeverityCritical:
		s.Critical++
	case SeverityHigh:
		s.High++
	case SeverityMedium:
		s.Medium++
	case SeverityLow:
		s.Low++
	default:
		s.Info++
	}
}

// Count returns the number of unsuppressed findings of severity sev.
func (s Summary) Count(sev Severity) int {
	switch sev {
	case SeverityCritical:
		return s.Critical
	case SeverityHigh:
		return s.High
	case SeverityMedium:
		return s.Medium
	case SeverityLow:
		return s.Low
	}
	return s.Info
}

// Result is everything one run found: the JSON report is this struct.
type Result struct {
	Version  int       `json:"version"`
	Targets  []Target  `json:"targets"`
	Findings []Finding `json:"findings"`
	Errors   []Error   `json:"errors"`
	Summary  Summary   `json:"summary"`
	// Components are what the targets are made of (model files, image
	// layers, declared CUDA and framework versions, verified signatures),
	// for a bill of materials; omitted when there are none.
	Components []Component `json:"components,omitempty"`
}

// ReportVersion is the JSON report's version field.
const ReportVersion = 1

// Failed reports whether any unsuppressed finding is at or above sev.
func (r *Result) Failed(sev Severity) bool {
	for _, f := range r.Findings {
		if f.Suppressed == "" && f.Severity >= sev {
			return true
		}
	}
	return false
}
