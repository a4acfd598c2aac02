//go:build !mlwarden_sbatch

package scan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// runDir scans dir with the vulns check and the given flags.
func runDir(t *testing.T, flags map[string][]string, dir string) (*Result, error) {
	t.Helper()
	v, err := Configure("scan", flags, noEnvTC, []string{dir})
	if err != nil {
		return nil, err
	}
	o, err := OptionsFrom(v)
	if err != nil {
		return nil, err
	}
	o.Checks = []string{"vulns"}
	sc, err := New(o)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	return sc.Run(context.Background(), Target{Ref: dir})
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPoliciesAndVEX: a policy's finding and a VEX statement go through
// the pipeline: the statement suppresses its vulns finding with the
// justification, the policy sees it suppressed, the policy's own finding
// is suppressed by an ignore entry, and the summary counts both.
func TestPoliciesAndVEX(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "requirements.txt"), "torch==2.5.1\n")
	pol := filepath.Join(t.TempDir(), "p.yaml")
	write(t, pol, `policies:
  - name: old-torch
    deny: 'packages.exists(p, p.name == "torch" && p.version.startsWith("2.5"))'
    message: torch before 2.6
    severity: medium
  - name: unsuppressed-vulns
    deny: 'findings.exists(f, f.check == "vulns" && !f.suppressed)'
    message: an unsuppressed vulnerability
`)
	res, err := runDir(t, map[string][]string{"policy": {pol}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]scanners.Finding{}
	for _, f := range res.Findings {
		rules[f.RuleID] = f
	}
	if _, ok := rules["policy/old-torch"]; !ok {
		t.Fatalf("no policy/old-torch finding in %v", res.Findings)
	}
	if _, ok := rules["policy/unsuppressed-vulns"]; !ok {
		t.Fatalf("no policy/unsuppressed-vulns finding in %v", res.Findings)
	}
	var vuln *scanners.Finding
	for i, f := range res.Findings {
		if f.Check == "vulns" && f.Vulnerability != nil && f.Vulnerability.ID != "" {
			vuln = &res.Findings[i]
			break
		}
	}
	if vuln == nil {
		t.Fatalf("no vulns finding with a vulnerability: %v", res.Findings)
	}

	vexDoc := filepath.Join(t.TempDir(), "v.json")
	write(t, vexDoc, `{"@context": "https://openvex.dev/ns/v0.2.0", "@id": "https://example.com/vex/1", "author": "sec@example.com",
 "timestamp": "2026-01-01T00:00:00Z", "version": 1, "statements": [{"vulnerability": {"name": "`+vuln.Vulnerability.ID+`"},
 "products": [{"@id": "pkg:pypi/torch"}], "status": "not_affected", "justification": "vulnerable_code_not_in_execute_path"}]}`)
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	write(t, cfg, "ignore:\n  - rule: policy/old-torch\n    reason: accepted until the upgrade\n")
	res, err = runDir(t, map[string][]string{"policy": {pol}, "vex": {vexDoc}, "config": {cfg}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	var vexed, ignored int
	for _, f := range res.Findings {
		switch {
		case f.RuleID == "policy/unsuppressed-vulns" && f.Suppressed == "":
			// Only when some other vulns finding is not covered.
			if vuln.Vulnerability.ID != "" && len(res.Findings) <= 3 {
				t.Errorf("policy saw the VEX-suppressed finding as unsuppressed: %v", res.Findings)
			}
		case f.RuleID == "policy/old-torch":
			if !strings.Contains(f.Suppressed, "accepted until the upgrade") {
				t.Errorf("policy finding not suppressed by its ignore entry: %+v", f)
			}
			ignored++
		case f.Vulnerability != nil && f.Vulnerability.ID == vuln.Vulnerability.ID:
			if !strings.Contains(f.Suppressed, "VEX not_affected (vulnerable_code_not_in_execute_path)") || f.Justification != "vulnerable_code_not_in_execute_path" {
				t.Errorf("vulns finding not suppressed by VEX: %+v", f)
			}
			vexed++
		}
	}
	if vexed == 0 || ignored != 1 || res.Summary.Suppressed < 2 {
		t.Fatalf("vexed %d, ignored %d, summary %+v", vexed, ignored, res.Summary)
	}
}

// TestPolicyLoadErrorNamesLine: a policy in .mlwarden.yaml that does not
// compile is an error naming the config file and line.
func TestPolicyLoadErrorNamesLine(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "requirements.txt"), "torch==2.5.1\n")
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	write(t, cfg, "fail-on: high\npolicies:\n  - name: bad\n    deny: 'models.exists(m, m.owner == \"x\")'\n    message: m\n")
	_, err := runDir(t, map[string][]string{"config": {cfg}}, dir)
	if err == nil || !strings.Contains(err.Error(), cfg+":4: policy bad: deny:") {
		t.Fatalf("error %v", err)
	}
	bad := filepath.Join(t.TempDir(), "v.json")
	write(t, bad, `{"@context": "https://openvex.dev/ns/v0.2.0", "statements": []}`)
	if _, err := runDir(t, map[string][]string{"vex": {bad}}, dir); err == nil || !strings.Contains(err.Error(), "vex "+bad) {
		t.Fatalf("malformed VEX: error %v", err)
	}
}

// TestTargetConfigAddsPolicies: a scanned directory's own .mlwarden.yaml
// adds its policies to the user's.
func TestTargetConfigAddsPolicies(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "requirements.txt"), "torch==2.5.1\n")
	write(t, filepath.Join(dir, ".mlwarden.yaml"), "policies:\n  - name: theirs\n    deny: 'true'\n    message: the directory's own\n")
	pol := filepath.Join(t.TempDir(), "p.yaml")
	write(t, pol, "policies:\n  - name: mine\n    deny: 'true'\n    message: the user's\n")
	res, err := runDir(t, map[string][]string{"policy": {pol}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range res.Findings {
		got[f.RuleID] = true
	}
	if !got["policy/mine"] || !got["policy/theirs"] {
		t.Fatalf("findings %v", res.Findings)
	}
}
