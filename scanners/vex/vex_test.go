package vex

import (
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestPURLMatches(t *testing.T) {
	tests := []struct {
		stmt, pkg string
		want      bool
	}{
		{"pkg:pypi/torch", "pkg:pypi/torch@2.5.1", true},
		{"pkg:pypi/torch@2.5.1", "pkg:pypi/torch@2.5.1", true},
		{"pkg:pypi/torch@2.5.0", "pkg:pypi/torch@2.5.1", false},
		{"pkg:pypi/Torch_Nightly", "pkg:pypi/torch-nightly@1", true},
		{"pkg:pypi/torch?arch=x86_64", "pkg:pypi/torch@2.5.1", false},
		{"pkg:pypi/torch", "pkg:pypi/torch@2.5.1?arch=x86_64", true},
		{"pkg:generic/nvidia/nvidia-driver@550.54.15", "pkg:generic/nvidia/nvidia-driver@550.54.15", true},
		{"pkg:deb/nvidia/nvidia-driver", "pkg:generic/nvidia/nvidia-driver@550.54.15", false},
	}
	for _, tt := range tests {
		p, err1 := ParsePURL(tt.stmt)
		q, err2 := ParsePURL(tt.pkg)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if got := p.Matches(q); got != tt.want {
			t.Errorf("%s matches %s: %v, want %v", tt.stmt, tt.pkg, got, tt.want)
		}
	}
}

const openvexDoc = `{"@context": "https://openvex.dev/ns/v0.2.0", "@id": "https://example.com/vex/1", "author": "sec@example.com",
 "timestamp": "2026-01-01T00:00:00Z", "version": 1, "statements": [
  {"vulnerability": {"name": "CVE-2025-32434", "aliases": ["GHSA-53q9-r3pm-6pq6"]}, "products": [{"@id": "pkg:pypi/torch"}],
   "status": "not_affected", "justification": "vulnerable_code_not_in_execute_path"},
  {"vulnerability": {"name": "GHSA-x"}, "products": [{"@id": "pkg:oci/app?digest=x", "identifiers": {"purl": "pkg:oci/app@sha256:d"},
   "subcomponents": [{"@id": "pkg:pypi/ray"}]}], "status": "fixed"},
  {"vulnerability": {"name": "CVE-2026-1"}, "products": [{"@id": "pkg:pypi/vllm"}], "status": "affected"}]}`

func TestApply(t *testing.T) {
	st, err := Parse("v.json", []byte(openvexDoc))
	if err != nil {
		t.Fatal(err)
	}
	s := &Set{statements: st}
	res := &scanners.Result{
		Targets: []scanners.Target{{Name: "registry:r/app:1", Kind: scanners.KindImage, Digest: "sha256:d"}},
		Findings: []scanners.Finding{
			{RuleID: "vulns/python-package", Target: "registry:r/app:1", Vulnerability: &scanners.Vulnerability{ID: "GHSA-53q9-r3pm-6pq6", PURL: "pkg:pypi/torch@2.5.1"}},
			{RuleID: "vulns/python-package", Target: "registry:r/app:1", Vulnerability: &scanners.Vulnerability{ID: "GHSA-x", PURL: "pkg:pypi/ray@2.0"}},
			{RuleID: "vulns/python-package", Target: "registry:r/app:1", Vulnerability: &scanners.Vulnerability{ID: "CVE-2026-1", PURL: "pkg:pypi/vllm@0.1"}},
			{RuleID: "vulns/python-package", Target: "registry:r/app:1", Vulnerability: &scanners.Vulnerability{ID: "CVE-9", PURL: "pkg:pypi/torch@2.5.1"}},
		},
	}
	if n := s.Apply(res); n != 2 {
		t.Fatalf("suppressed %d: %+v", n, res.Findings)
	}
	f := res.Findings
	if !strings.Contains(f[0].Suppressed, "VEX not_affected (vulnerable_code_not_in_execute_path), statement 1 of v.json") || f[0].Justification != "vulnerable_code_not_in_execute_path" {
		t.Errorf("alias match: %+v", f[0])
	}
	if !strings.HasPrefix(f[1].Suppressed, "VEX fixed") || f[1].Justification != "fixed" {
		t.Errorf("subcomponent of the image: %+v", f[1])
	}
	if f[2].Suppressed != "" || f[3].Suppressed != "" {
		t.Errorf("affected, other vulnerability: %+v %+v", f[2], f[3])
	}
	if res.Summary.Suppressed != 2 {
		t.Errorf("summary %+v", res.Summary)
	}
}

func TestCycloneDX(t *testing.T) {
	doc := `{"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
 "components": [{"type": "library", "bom-ref": "torch", "name": "torch", "purl": "pkg:pypi/torch@2.5.1"}],
 "vulnerabilities": [{"id": "CVE-2025-32434", "analysis": {"state": "not_affected", "justification": "code_not_reachable"}, "affects": [{"ref": "torch"}]},
  {"id": "CVE-2", "analysis": {"state": "resolved"}, "affects": [{"ref": "pkg:pypi/ray@2.0"}]}]}`
	st, err := Parse("c.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	s := &Set{statements: st}
	m := s.Match(scanners.Vulnerability{ID: "CVE-2025-32434", PURL: "pkg:pypi/torch@2.5.1"}, scanners.Target{})
	if m == nil || m.Status != StatusNotAffected || m.Justification != "code_not_reachable" {
		t.Fatalf("%+v", m)
	}
	if m := s.Match(scanners.Vulnerability{ID: "CVE-2", PURL: "pkg:pypi/ray@2.0"}, scanners.Target{}); m == nil || m.Status != StatusFixed {
		t.Fatalf("%+v", m)
	}
}

func TestMalformed(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":           `{`,
		"neither":            `{"a": 1}`,
		"no statements":      `{"@context": "https://openvex.dev/ns/v0.2.0", "@id": "x", "author": "a", "timestamp": "2026-01-01T00:00:00Z", "version": 1, "statements": []}`,
		"no justification":   strings.Replace(openvexDoc, `, "justification": "vulnerable_code_not_in_execute_path"`, "", 1),
		"bad justification":  strings.Replace(openvexDoc, "vulnerable_code_not_in_execute_path", "trust_me", 1),
		"bad status":         strings.Replace(openvexDoc, `"status": "affected"`, `"status": "maybe"`, 1),
		"cyclonedx no vulns": `{"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1}`,
	} {
		if _, err := Parse("d.json", []byte(doc)); err == nil || !strings.Contains(err.Error(), "d.json") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(openvexDoc))
	f.Add([]byte(`{"bomFormat": "CycloneDX", "vulnerabilities": [{"id": "x", "analysis": {"state": "resolved"}, "affects": [{"ref": "pkg:pypi/a"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := Parse("f", data)
		if err != nil {
			return
		}
		s := &Set{statements: st}
		s.Match(scanners.Vulnerability{ID: "x", PURL: "pkg:pypi/a@1"}, scanners.Target{Name: "t", Digest: "sha256:1"})
	})
}
