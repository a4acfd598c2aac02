package reports_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
)

// fullRules adds, to rules, one whose default severity differs from its
// finding's in sample (pins/image-not-digest is high by default, the
// finding medium), so that SARIF needs a descriptor per severity.
var fullRules = append([]scanners.Rule{
	{ID: "pins/image-not-digest", Check: "pins", Severity: scanners.SeverityHigh, Title: "Base image not pinned by digest", Why: "A tag can be moved to another image.", Fix: "Pin FROM by @sha256 digest (mlwarden pin)."},
	{ID: "cuda/undeclared", Check: "cuda", Severity: scanners.SeverityInfo, Title: "CUDA used without a version", Why: "Nothing checks it against the driver.", Fix: "Declare the CUDA version."},
	{ID: "models/torch-load-unsafe", Check: "models", Severity: scanners.SeverityHigh, Title: "torch.load without weights_only", Why: "It unpickles, which runs code.", Fix: "Pass weights_only=True."},
}, rules...)

// sampleBOM is sample with what a bill of materials lists: model files
// (one in an image layer, one signed), the image's layers, declared
// versions, a verified signature, and two repeated findings.
func sampleBOM() *scanners.Result {
	res := sample()
	img := res.Targets[1].Name
	layer := "sha256:" + strings.Repeat("cd", 32)
	res.Findings = append(res.Findings,
		scanners.Finding{RuleID: "models/torch-load-unsafe", Check: "models", Severity: scanners.SeverityHigh, Message: "torch.load without weights_only=True.", Target: "fixtures/demo", Path: "train.py", Line: 4, Fingerprint: "sha256:5555"},
		scanners.Finding{RuleID: "models/torch-load-unsafe", Check: "models", Severity: scanners.SeverityHigh, Message: "torch.load without weights_only=True.", Target: "fixtures/demo", Path: "train.py", Line: 9, Fingerprint: scanners.OccurrenceFingerprint("sha256:5555", 1)},
	)
	res.Summary = scanners.Summarize(res.Findings)
	res.Components = []scanners.Component{
		{Kind: scanners.ComponentModel, Target: "fixtures/demo", Path: "weights/model.safetensors", Name: "model.safetensors", Format: "safetensors", License: "Apache-2.0", Size: 3000, SHA256: strings.Repeat("ef", 32)},
		{Kind: scanners.ComponentFramework, Target: "fixtures/demo", Path: "requirements.txt", Line: 1, Name: "torch", Version: "2.4.0+cu121"},
		{Kind: scanners.ComponentCUDA, Target: "fixtures/demo", Path: "requirements.txt", Line: 1, Name: "CUDA", Version: "12.1", Properties: map[string]string{"declared-as": "torch==2.4.0+cu121"}},
		{Kind: scanners.ComponentSignature, Target: "fixtures/demo", Path: "weights/model.sig", Subject: "weights", Signer: "key SHA256:abcd"},
		{Kind: scanners.ComponentLayer, Target: img, Layer: "sha256:" + strings.Repeat("01", 32), Size: 1234, Properties: map[string]string{"index": "0", "blob": "sha256:" + strings.Repeat("02", 32), "created_by": "ADD rootfs.tar /"}},
		{Kind: scanners.ComponentLayer, Target: img, Layer: layer, Size: 99, Properties: map[string]string{"index": "1", "created_by": "COPY hf.sh /etc/profile.d/"}},
		{Kind: scanners.ComponentModel, Target: img, Path: "/models/clf.pkl", Name: "clf.pkl", Format: "pickle", Size: 77, Layer: layer},
	}
	return res
}

var fixedOptions = reports.Options{
	ToolVersion: "1.2.3", Rules: fullRules, SourceRoot: "/src/project",
	Start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), End: time.Date(2026, 3, 1, 12, 0, 42, 0, time.UTC),
	Category: reports.Category([]string{"fixtures/demo", "registry:registry.example.com/team/trainer:1.0"}),
}

func failOnHigh() reports.Options {
	o := fixedOptions
	high := scanners.SeverityHigh
	o.FailOn = &high
	return o
}

func render(t *testing.T, format string, res *scanners.Result, o reports.Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := reports.Write(&buf, format, res, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGoldenFormats(t *testing.T) {
	for _, tc := range []struct{ format, file string }{
		{"sarif", "full.sarif"},
		{"cyclonedx", "report.cdx.json"},
		{"junit", "report.junit.xml"},
		{"gitlab", "report.gitlab-sast.json"},
		{"gitlab-secrets", "report.gitlab-secrets.json"},
		{"html", "report.html"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			got := render(t, tc.format, sampleBOM(), failOnHigh())
			golden := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s output differs from %s (run go test ./reports -update to accept):\n%s", tc.format, golden, got)
			}
		})
	}
}

// schemas compiles the published schemas in fixtures/schemas, each under
// its own ID, offline.
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	dir := filepath.Join("..", "fixtures", "schemas")
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	files := map[string]string{
		"https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json":                                    "sarif-schema-2.1.0.json",
		"http://cyclonedx.org/schema/bom-1.6.schema.json":                                                                               "cyclonedx-bom-1.6.schema.json",
		"http://cyclonedx.org/schema/spdx.schema.json":                                                                                  "cyclonedx-spdx.schema.json",
		"http://cyclonedx.org/schema/jsf-0.82.schema.json":                                                                              "cyclonedx-jsf-0.82.schema.json",
		"https://gitlab.com/gitlab-org/security-products/security-report-schemas/-/raw/master/dist/sast-report-format.json":             "gitlab-sast-report-format-15.2.1.json",
		"https://gitlab.com/gitlab-org/security-products/security-report-schemas/-/raw/master/dist/secret-detection-report-format.json": "gitlab-secret-detection-report-format-15.2.1.json",
	}
	for id, f := range files {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for format, id := range map[string]string{
		"sarif":          "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
		"cyclonedx":      "http://cyclonedx.org/schema/bom-1.6.schema.json",
		"gitlab":         "https://gitlab.com/gitlab-org/security-products/security-report-schemas/-/raw/master/dist/sast-report-format.json",
		"gitlab-secrets": "https://gitlab.com/gitlab-org/security-products/security-report-schemas/-/raw/master/dist/secret-detection-report-format.json",
	} {
		s, err := c.Compile(id)
		if err != nil {
			t.Fatalf("compile %s: %v", id, err)
		}
		out[format] = s
	}
	return out
}

func validate(t *testing.T, s *jsonschema.Schema, doc []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// TestSchemas validates every JSON format against its published schema:
// the full sample, a clean run, and a run with only errors. A document
// broken on purpose must fail, so the validator is known to look.
func TestSchemas(t *testing.T) {
	sch := schemas(t)
	clean := &scanners.Result{Version: scanners.ReportVersion, Targets: []scanners.Target{{Name: ".", Kind: scanners.KindDir}}}
	broken := &scanners.Result{Version: scanners.ReportVersion, Errors: []scanners.Error{{Target: "registry:x/y:1", Message: "pull: unauthorized"}}}
	for format, s := range sch {
		for name, res := range map[string]*scanners.Result{"sample": sampleBOM(), "clean": clean, "errors only": broken} {
			if err := validate(t, s, render(t, format, res, failOnHigh())); err != nil {
				t.Errorf("%s, %s: not valid: %v", format, name, err)
			}
		}
		// The same document with its required top-level key removed.
		var m map[string]any
		if err := json.Unmarshal(render(t, format, sampleBOM(), fixedOptions), &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"version", "specVersion"} {
			delete(m, k)
		}
		bad, _ := json.Marshal(m)
		if err := validate(t, s, bad); err == nil {
			t.Errorf("%s: a document without its version validated", format)
		}
	}
}

// TestSARIFSeverityPerFinding: GitHub reads security-severity from the
// descriptor a result points to, so each result's descriptor carries the
// finding's own severity, and the rule ID stays findable.
func TestSARIFSeverityPerFinding(t *testing.T) {
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID         string            `json:"id"`
						Properties map[string]any    `json:"properties"`
						Default    map[string]string `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string         `json:"ruleId"`
				RuleIndex int            `json:"ruleIndex"`
				Props     map[string]any `json:"properties"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI, URIBaseID string
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
			AutomationDetails struct {
				ID string `json:"id"`
			} `json:"automationDetails"`
			OriginalURIBaseIDs map[string]struct {
				URI string `json:"uri"`
			} `json:"originalUriBaseIds"`
		} `json:"runs"`
	}
	res := sampleBOM()
	if err := json.Unmarshal(render(t, "sarif", res, fixedOptions), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	score := map[string]string{"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0", "info": "1.0"}
	fps := map[string]bool{}
	for i, r := range run.Results {
		f := res.Findings[i]
		d := run.Tool.Driver.Rules[r.RuleIndex]
		if d.ID != r.RuleID || d.Properties["security-severity"] != score[f.Severity.String()] || r.Props["rule_id"] != f.RuleID {
			t.Errorf("%s (%s): descriptor %s with severity %v", f.RuleID, f.Severity, d.ID, d.Properties["security-severity"])
		}
		loc := r.Locations[0].PhysicalLocation
		if loc.Region.StartLine < 1 || strings.HasPrefix(loc.ArtifactLocation.URI, "/") {
			t.Errorf("%s: location %+v", f.RuleID, loc)
		}
		fp := r.PartialFingerprints["mlwarden/v1"]
		if fps[fp] {
			t.Errorf("fingerprint %s repeated", fp)
		}
		fps[fp] = true
	}
	// pins/image-not-digest is high by default, its finding medium.
	if r := run.Results[1]; r.RuleID != "pins/image-not-digest/medium" {
		t.Errorf("medium finding of a high rule: ruleId %s", r.RuleID)
	}
	if run.AutomationDetails.ID != "mlwarden/fixtures_demo,registry:registry.example.com_team_trainer:1.0/" || run.OriginalURIBaseIDs["%SRCROOT%"].URI != "file:///src/project/" {
		t.Errorf("automation %q, base ids %+v", run.AutomationDetails.ID, run.OriginalURIBaseIDs)
	}
}

func TestJUnit(t *testing.T) {
	type junitDoc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Failures  []struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Errors []struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	for _, tc := range []struct {
		name         string
		o            reports.Options
		wantFailures int
	}{{"fail-on high", failOnHigh(), 4}, {"fail-on none", fixedOptions, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			var doc junitDoc
			if err := xml.Unmarshal(render(t, "junit", sampleBOM(), tc.o), &doc); err != nil {
				t.Fatal(err)
			}
			// Two targets, one case per rule (5) plus the scan's errors in the first.
			if len(doc.Suites) != 2 || doc.Suites[0].Name != "fixtures/demo" || doc.Tests != 11 || doc.Errors != 1 || doc.Failures != tc.wantFailures {
				t.Fatalf("suites %d, tests %d, failures %d, errors %d", len(doc.Suites), doc.Tests, doc.Failures, doc.Errors)
			}
			for _, c := range doc.Suites[0].Cases {
				switch c.Name {
				case "models/torch-load-unsafe":
					if tc.wantFailures > 0 && len(c.Failures) != 2 {
						t.Errorf("torch.load twice: %d failures", len(c.Failures))
					}
				case "pins/image-not-digest":
					if len(c.Failures) != 0 || !strings.Contains(c.Out, "suppressed") {
						t.Errorf("suppressed finding: %+v", c)
					}
				case "cuda/undeclared":
					if len(c.Failures) != 0 || !strings.Contains(c.Out, "requirements.txt") {
						t.Errorf("info finding below fail-on: %+v", c)
					}
				case "secrets/huggingface-token":
					if len(c.Failures) != 0 || c.Out != "" {
						t.Errorf("a rule without findings here passes: %+v", c)
					}
				}
			}
		})
	}
}

func TestGitLabSplitsSecrets(t *testing.T) {
	var sast, secrets struct {
		Scan struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"scan"`
		Vulnerabilities []struct {
			ID          string `json:"id"`
			Identifiers []struct {
				Value string `json:"value"`
			} `json:"identifiers"`
			Location struct {
				File   string `json:"file"`
				Commit *struct {
					SHA string `json:"sha"`
				} `json:"commit"`
			} `json:"location"`
		} `json:"vulnerabilities"`
	}
	if err := json.Unmarshal(render(t, "gitlab", sampleBOM(), fixedOptions), &sast); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(render(t, "gitlab-secrets", sampleBOM(), fixedOptions), &secrets); err != nil {
		t.Fatal(err)
	}
	// Five findings: one suppressed (left out), one secret.
	if sast.Scan.Type != "sast" || sast.Scan.Status != "failure" || len(sast.Vulnerabilities) != 4 {
		t.Errorf("sast %+v", sast)
	}
	if secrets.Scan.Type != "secret_detection" || len(secrets.Vulnerabilities) != 1 || secrets.Vulnerabilities[0].Location.Commit == nil {
		t.Errorf("secrets %+v", secrets)
	}
	ids := map[string]bool{}
	for _, v := range sast.Vulnerabilities {
		if ids[v.ID] {
			t.Errorf("id %s repeated", v.ID)
		}
		ids[v.ID] = true
	}
}
