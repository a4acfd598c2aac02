package suppress

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestInline(t *testing.T) {
	data := []byte(strings.Join([]string{
		"needle",
		"needle # mlwarden:ignore a/word test fixture",
		"needle # mlwarden:ignore b/word",
		"needle # mlwarden:ignore",
		"needle # mlwarden:ignore a/* all of check a",
	}, "\n"))
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: "x.sh"}
	var fs []scanners.Finding
	for i := range 5 {
		fs = append(fs, scanners.Finding{RuleID: "a/word", Path: "x.sh", Line: i + 1})
	}
	// A finding about another file is not the line's business.
	fs = append(fs, scanners.Finding{RuleID: "a/word", Path: "other", Line: 2})
	Inline(a, data, fs)
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%d:%v", f.Line, f.Suppressed != ""))
	}
	if want := "[1:false 2:true 3:false 4:true 5:true 2:false]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// TestInlineThroughDispatcher checks the hook: the dispatcher hands the
// content it holds, and patch artifacts map lines back.
func TestInlineThroughDispatcher(t *testing.T) {
	src := memSource{files: map[string]string{"x.sh": "needle\nneedle # mlwarden:ignore a/word\n"}}
	res := scanners.NewDispatcher([]scanners.Scanner{word{}}, scanners.WithInlineSuppression(Inline)).Run(context.Background(), src)
	if res.Summary.High != 1 || res.Summary.Suppressed != 1 {
		t.Errorf("summary %+v, want 1 high and 1 suppressed", res.Summary)
	}
}

func parseIgnores(t *testing.T, doc string) []Ignore {
	t.Helper()
	var v struct {
		Ignore []Ignore `yaml:"ignore"`
	}
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	return v.Ignore
}

func TestIgnoreErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"ignore:\n  - rule: secrets/x\n", "line 2: ignore entry needs a reason"},
		{"ignore:\n  - reason: r\n", "needs at least one of rule, path, fingerprint"},
		{"ignore:\n  - rul: x\n    reason: r\n", `line 2: unknown key "rul"`},
		{"ignore:\n  - rule: secrets\n    reason: r\n", "is not a rule ID"},
		{"ignore:\n  - path: '[a'\n    reason: r\n", "not a valid glob"},
		{"ignore:\n  - rule: '*'\n    reason: r\n    expires: 31/12/2026\n", "is not a date"},
	} {
		var v struct {
			Ignore []Ignore `yaml:"ignore"`
		}
		err := yaml.Unmarshal([]byte(tc.yaml), &v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.yaml, err, tc.want)
		}
	}
}

func TestApply(t *testing.T) {
	ignores := parseIgnores(t, `ignore:
  - rule: pins/*
    path: "examples/**"
    reason: examples are not deployed
  - fingerprint: sha256:ff
    reason: rotated
    expires: 2026-06-30
  - rule: misconfig/crypto-miner
    reason: honeypot
    expires: 2020-01-01
`)
	res := &scanners.Result{Findings: []scanners.Finding{
		{RuleID: "pins/pip-unpinned", Path: "examples/a/req.txt", Severity: scanners.SeverityMedium},
		{RuleID: "pins/pip-unpinned", Path: "src/req.txt", Severity: scanners.SeverityMedium},
		{RuleID: "secrets/x", Path: "a", Fingerprint: "sha256:ff", Severity: scanners.SeverityCritical},
		{RuleID: "misconfig/crypto-miner", Path: "m.sh", Severity: scanners.SeverityCritical},
		{RuleID: "models/y", Path: "b", Fingerprint: "sha256:bb", Severity: scanners.SeverityHigh},
	}}
	day := func(s string) func() time.Time {
		d, _ := time.Parse(time.DateOnly, s)
		return func() time.Time { return d.Add(12 * time.Hour) }
	}
	set := &Set{Ignores: ignores, Baseline: Baseline{"sha256:bb": true}, Now: day("2026-06-30")}
	warnings := set.Apply(res)
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.Suppressed)
	}
	want := []string{"ignored: examples are not deployed", "", "ignored: rotated (until 2026-06-30)", "", "in baseline"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("suppressed %q, want %q", got, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "expired on 2020-01-01") {
		t.Errorf("warnings %q", warnings)
	}
	if res.Summary.Suppressed != 3 || res.Summary.Critical != 1 || res.Summary.Medium != 1 {
		t.Errorf("summary %+v", res.Summary)
	}
	// The day after the expiry the entry no longer applies.
	res.Findings[2].Suppressed = ""
	(&Set{Ignores: ignores, Now: day("2026-07-01")}).Apply(res)
	if res.Findings[2].Suppressed != "" {
		t.Error("an expired entry still applies")
	}
}

func TestApplyGitleaks(t *testing.T) {
	res := &scanners.Result{Findings: []scanners.Finding{
		{RuleID: "secrets/hf", Check: scanners.CheckSecrets, Target: "dir", Path: "a.env", Line: 3, Severity: scanners.SeverityCritical},
		{RuleID: "secrets/hf", Check: scanners.CheckSecrets, Target: "other", Path: "a.env", Line: 3, Severity: scanners.SeverityCritical},
	}}
	set := &Set{
		Gitleaks:       map[string]GitleaksIgnore{"dir": ParseGitleaksIgnore([]byte("a.env:hf-token:3\n"))},
		GitleaksRuleID: func(id string) (string, bool) { return "hf-token", id == "secrets/hf" },
	}
	set.Apply(res)
	if res.Findings[0].Suppressed != "listed in .gitleaksignore" || res.Findings[1].Suppressed != "" {
		t.Errorf("suppressed %q, %q", res.Findings[0].Suppressed, res.Findings[1].Suppressed)
	}
}

type memSource struct{ files map[string]string }

func (m memSource) Target() scanners.Target {
	return scanners.Target{Name: "t", Kind: scanners.KindDir}
}
func (m memSource) Walk(ctx context.Context, sink scanners.Sink) error {
	for p, data := range m.files {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: p, Size: int64(len(data))}
		if err := sink.Artifact(a, strings.NewReader(data)); err != nil {
			return err
		}
	}
	return nil
}

// word reports every line holding "needle".
type word struct{}

func (word) Check() string { return "a" }
func (word) Rules() []scanners.Rule {
	return []scanners.Rule{{ID: "a/word", Check: "a", Severity: scanners.SeverityHigh}}
}
func (word) Wants(*scanners.Artifact, []byte) bool { return true }
func (w word) Scan(_ context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	data, _, err := scanners.ReadAll(c, 0)
	var out []scanners.Finding
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "needle") {
			out = append(out, scanners.At(a, w.Rules()[0], i+1, "needle"))
		}
	}
	return out, err
}

// TestBaselineFromBeforeRepeats: a baseline written when repeated findings
// shared one fingerprint still covers each of them now that they have their
// own, and a unique finding's entry still matches; a new repeat is new.
func TestBaselineFromBeforeRepeats(t *testing.T) {
	f := func(line int, fp string) scanners.Finding {
		return scanners.Finding{RuleID: "models/torch-load-unsafe", Target: "t", Path: "train.py", Line: line, Fingerprint: fp}
	}
	old := &scanners.Result{Findings: []scanners.Finding{f(3, "sha256:aa"), f(5, "sha256:aa"), f(9, "sha256:aa"), f(12, "sha256:uu")}}
	now := []scanners.Finding{f(3, "sha256:aa"), f(5, "sha256:aa"), f(9, "sha256:aa"), f(10, "sha256:aa"), f(12, "sha256:uu")}
	scanners.DistinguishRepeats(now)
	res := &scanners.Result{Findings: now}
	(&Set{Baseline: BaselineOf(old)}).Apply(res)
	for i, fd := range res.Findings {
		wantSuppressed := i != 3
		if (fd.Suppressed != "") != wantSuppressed {
			t.Errorf("finding %d (line %d, %s): suppressed %q, want suppressed %v", i, fd.Line, fd.Fingerprint, fd.Suppressed, wantSuppressed)
		}
	}
	// A baseline written now (distinct fingerprints) reads back the same.
	again := &scanners.Result{Findings: now}
	if b := BaselineOf(again); len(b) != 5 {
		t.Errorf("baseline of a new report has %d entries, want 5", len(b))
	}
}

// TestSecretAllowed: gitleaks' and detect-secrets' markers, as their tools
// write and read them.
func TestSecretAllowed(t *testing.T) {
	for _, tt := range []struct {
		lines, previous string
		want            bool
	}{
		{`token = "x"  # gitleaks:allow`, "", true},
		{`token = "x"  # pragma: allowlist secret`, "", true},
		{`token = "x"  // pragma:allowlist-secret`, "", true},
		{`token = "x"`, "# pragma: allowlist nextline secret", true},
		{`token = "x"`, "-- pragma: allowlist-nextline-secret", true},
		{`token = "x"`, "# pragma: allowlist secret", false}, // same-line form, on another line
		{`token = "x"  # allowlist secret`, "", false},
		{`token = "x"`, "", false},
	} {
		reason, ok := SecretAllowed(tt.lines, tt.previous)
		if ok != tt.want || ok && reason == "" {
			t.Errorf("%q after %q: %v %q, want %v", tt.lines, tt.previous, ok, reason, tt.want)
		}
	}
}

// TestLegacySecretFingerprints: a baseline or ignore entry written before
// secrets' fingerprints went through SecretKey (issue 16) still suppresses
// the finding, repeats included, while its secret is in memory.
func TestLegacySecretFingerprints(t *testing.T) {
	mk := func(line int) scanners.Finding {
		return scanners.Finding{RuleID: "secrets/hf", Check: scanners.CheckSecrets, Target: "dir", Path: "a.env", Line: line,
			Message: "token", Evidence: "hf_a…zz", Secret: "hf_not_a_real_token_value", Severity: scanners.SeverityCritical}
	}
	old := []scanners.Finding{mk(1), mk(2), mk(3)}
	oldRes := &scanners.Result{}
	for i := range old {
		old[i].Fingerprint = scanners.LegacyFingerprint(&old[i]) // as before issue 16
	}
	oldRes.Findings = old
	scanners.DistinguishRepeats(oldRes.Findings)
	baseline := BaselineOf(oldRes)

	res := &scanners.Result{Findings: []scanners.Finding{mk(1), mk(2), mk(3), mk(4)}}
	scanners.FingerprintAll(res.Findings, 1)
	scanners.DistinguishRepeats(res.Findings)
	for _, f := range res.Findings {
		if baseline[f.Fingerprint] {
			t.Fatal("new fingerprint equals a legacy one")
		}
	}
	(&Set{Baseline: baseline}).Apply(res)
	for i, f := range res.Findings {
		if want := i < 3; (f.Suppressed == "in baseline") != want {
			t.Errorf("finding %d: suppressed %q", i, f.Suppressed)
		}
	}
	// An ignore entry naming the legacy fingerprint of the first.
	res = &scanners.Result{Findings: []scanners.Finding{mk(1)}}
	scanners.FingerprintAll(res.Findings, 1)
	ig := parseIgnores(t, "ignore:\n  - fingerprint: "+oldRes.Findings[0].Fingerprint+"\n    reason: rotated\n")
	(&Set{Ignores: ig}).Apply(res)
	if res.Findings[0].Suppressed != "ignored: rotated" {
		t.Errorf("legacy ignore entry: %q", res.Findings[0].Suppressed)
	}
	// Without the secret in memory (a cache replay), only the current form.
	res.Findings[0].Suppressed, res.Findings[0].Secret = "", ""
	(&Set{Ignores: ig}).Apply(res)
	if res.Findings[0].Suppressed != "" {
		t.Error("matched without the secret")
	}
}

// TestUnlessLive: an entry with unless: live does not apply to a finding
// the provider said works, and does to the others; any other condition is
// an error.
func TestUnlessLive(t *testing.T) {
	ignores := parseIgnores(t, "ignore:\n  - rule: secrets/*\n    reason: test tokens\n    unless: live\n")
	res := &scanners.Result{Findings: []scanners.Finding{
		{RuleID: "secrets/huggingface-token", Path: "a", Verification: scanners.VerificationLive},
		{RuleID: "secrets/huggingface-token", Path: "b", Verification: scanners.VerificationRevoked},
		{RuleID: "secrets/huggingface-token", Path: "c"},
	}}
	(&Set{Ignores: ignores}).Apply(res)
	if res.Findings[0].Suppressed != "" || res.Findings[1].Suppressed == "" || res.Findings[2].Suppressed == "" {
		t.Errorf("suppressed %q %q %q", res.Findings[0].Suppressed, res.Findings[1].Suppressed, res.Findings[2].Suppressed)
	}
	var v struct {
		Ignore []Ignore `yaml:"ignore"`
	}
	if err := yaml.Unmarshal([]byte("ignore:\n  - rule: '*'\n    reason: r\n    unless: revoked\n"), &v); err == nil || !strings.Contains(err.Error(), `the only condition is "live"`) {
		t.Errorf("unless: revoked: %v", err)
	}
}
