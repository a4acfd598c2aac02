package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/rules"
)

// TestConvert reads a small OSV-format export (records written for this
// test: a GitHub record with a CVSS v4 vector and a database severity, its
// PyPA duplicate, a CVSS v3 record with a GIT range and two ECOSYSTEM
// ranges, one without a severity or fix, a withdrawn one, one for a
// package not asked for, one inside a zip as the export ships them).
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	zipPath := filepath.Join(dir, "all.zip")
	f, err := os.Create(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.Create("GHSA-test-zip1-mlfw.json")
	data, err := os.ReadFile("testdata/zip/GHSA-test-zip1-mlfw.json")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	zw.Close()
	f.Close()

	recs, err := readAll([]string{"testdata/osv", zipPath})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 {
		t.Fatalf("%d records", len(recs))
	}
	out, warnings, err := Convert(recs, []string{"torch", "vllm", "jupyter-server", "ray", "mlflow"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "not PEP 440") {
		t.Errorf("warnings %q", warnings)
	}
	tb, err := rules.ParseAdvisories(out)
	if err != nil {
		t.Fatalf("output does not load: %v\n%s", err, out)
	}
	byID := map[string]rules.Advisory{}
	var ids []string
	for _, a := range tb.Advisories {
		byID[a.ID] = a
		ids = append(ids, a.ID)
	}
	// Sorted by package, then ID; the duplicate merged; withdrawn and
	// other packages left out.
	if got := strings.Join(ids, " "); got != "PYSEC-2099-2 CVE-2099-1003 CVE-2025-32434 CVE-2099-1001" {
		t.Fatalf("rows %s\n%s", got, out)
	}
	torch := byID["CVE-2025-32434"]
	if torch.Severity != "critical" || torch.Source != "https://nvd.nist.gov/vuln/detail/CVE-2025-32434" ||
		strings.Join(torch.Aliases, ",") != "GHSA-53q9-r3pm-6pq6,PYSEC-2025-41" || torch.Published != "2025-04-17" ||
		len(torch.Affected[0].Ranges) != 1 || torch.Affected[0].Ranges[0] != (rules.Range{Fixed: "2.6.0"}) {
		t.Errorf("torch row %+v", torch)
	}
	vllm := byID["CVE-2099-1001"]
	if vllm.Severity != "critical" || vllm.CVSS != "9.8" || vllm.Affected[0].Package != "vllm" || len(vllm.Affected[0].Ranges) != 2 ||
		vllm.Affected[0].Ranges[1] != (rules.Range{Introduced: "0.9.0", LastAffected: "0.9.2"}) ||
		vllm.Impact != "Test record: an unauthenticated endpoint of vLLM runs code." {
		t.Errorf("vllm row %+v", vllm)
	}
	js := byID["PYSEC-2099-2"]
	if js.Severity != "medium" || !strings.Contains(js.Note, "medium assumed") || js.Affected[0].Package != "jupyter-server" ||
		js.Affected[0].Ranges[0] != (rules.Range{Introduced: "2.0.0"}) || js.Source != "https://osv.dev/vulnerability/PYSEC-2099-2" {
		t.Errorf("jupyter-server row %+v", js)
	}
	if ml := byID["CVE-2099-1003"]; ml.CVSS != "6.4" || ml.Severity != "medium" {
		t.Errorf("mlflow row %+v", ml)
	}
	// The same input gives the same bytes.
	again, _, _ := Convert(recs, []string{"torch", "vllm", "jupyter-server", "ray", "mlflow"})
	if string(again) != string(out) {
		t.Error("output is not reproducible")
	}
}

func TestCVSS3(t *testing.T) {
	for vec, want := range map[string]float64{
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H": 9.8,
		"CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:C/C:L/I:L/A:N": 6.4,
		"CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H": 7.8,
		"CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:C/C:H/I:H/A:H": 9.0,
		"CVSS:3.0/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H": 10.0,
		"CVSS:3.1/AV:L/AC:H/PR:L/UI:N/S:U/C:N/I:N/A:N": 0,
	} {
		got, err := CVSS3(vec)
		if err != nil || got != want {
			t.Errorf("%s: %v (%v), want %v", vec, got, err, want)
		}
	}
	for _, bad := range []string{"CVSS:4.0/AV:N", "", "CVSS:3.1/AV:X/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:Q/C:H/I:H/A:H"} {
		if _, err := CVSS3(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
