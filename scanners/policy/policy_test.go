package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"fail-on: severe\n", "line 1: unknown severity"},
		{"checkz: [secrets]\n", "line 1: field checkz not found"},
		{"ignore:\n  - rule: secrets/x\n", "line 2: ignore entry needs a reason"},
		{"ignore:\n  - reason: r\n", "needs at least one of rule, path, fingerprint"},
		{"ignore:\n  - rul: x\n    reason: r\n", `line 2: unknown key "rul"`},
		{"ignore:\n  - rule: secrets\n    reason: r\n", "is not a rule ID"},
		{"ignore:\n  - path: '[a'\n    reason: r\n", "not a valid glob"},
		{"ignore:\n  - rule: '*'\n    reason: r\n    expires: 31/12/2026\n", "is not a date"},
	} {
		_, err := Parse("cfg.yaml", []byte(tc.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), "config cfg.yaml: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming the file and containing %q", tc.yaml, err, tc.want)
		}
	}
}

func TestApply(t *testing.T) {
	cfg, err := Parse("cfg.yaml", []byte(`ignore:
  - rule: pins/*
    path: "examples/**"
    reason: examples are not deployed
  - fingerprint: sha256:ff
    reason: rotated
    expires: 2026-06-30
  - rule: misconfig/crypto-miner
    reason: honeypot
    expires: 2020-01-01
`))
	if err != nil {
		t.Fatal(err)
	}
	res := &scanners.Result{Findings: []scanners.Finding{
		{RuleID: "pins/pip-unpinned", Path: "examples/a/req.txt", Severity: scanners.SeverityMedium},
		{RuleID: "pins/pip-unpinned", Path: "src/req.txt", Severity: scanners.SeverityMedium},
		{RuleID: "secrets/x", Path: "a", Fingerprint: "sha256:ff", Severity: scanners.SeverityCritical},
		{RuleID: "misconfig/crypto-miner", Path: "m.sh", Severity: scanners.SeverityCritical},
		{RuleID: "models/y", Path: "b", Fingerprint: "sha256:bb", Severity: scanners.SeverityHigh},
	}}
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d.Add(12 * time.Hour) }
	warnings := Apply(res, cfg.Ignore, map[string]bool{"sha256:bb": true}, day("2026-06-30"))
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
	Apply(res, cfg.Ignore, nil, day("2026-07-01"))
	if res.Findings[2].Suppressed != "" {
		t.Error("an expired entry still applies")
	}
}
