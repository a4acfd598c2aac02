package reports_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func sample() *scanners.Result {
	res := &scanners.Result{
		Version: scanners.ReportVersion,
		Targets: []scanners.Target{
			{Name: "fixtures/demo", Kind: scanners.KindDir, Notes: []string{"scope: --since-commit main (" + strings.Repeat("c0", 20) + "): the 3 file(s) changed since that commit or untracked; deleted files are not findings, the rest of the directory was not scanned"},
				VCS: &scanners.VCS{RepositoryURI: "https://git.example.com/team/demo.git", Revision: strings.Repeat("d1", 20), Branch: "feature", Scope: "since-commit " + strings.Repeat("c0", 20)}},
			{Name: "registry:registry.example.com/team/trainer:1.0", Kind: scanners.KindImage, Digest: "sha256:" + strings.Repeat("ab", 32), Notes: []string{"platform linux/amd64"}},
		},
		Findings: []scanners.Finding{
			{RuleID: "misconfig/notebook-exposed", Check: "misconfig", Severity: scanners.SeverityCritical, Message: "Jupyter listens on all interfaces with authentication disabled.", Target: "fixtures/demo", Path: "launch_notebook.sh", Line: 3, Evidence: "jupyter lab --ip=0.0.0.0", Fingerprint: "sha256:1111"},
			{RuleID: "pins/image-not-digest", Check: "pins", Severity: scanners.SeverityMedium, Message: "FROM uses a tag, not a digest.", Target: "fixtures/demo", Path: "Dockerfile", Line: 1, Fingerprint: "sha256:2222", Suppressed: "ignored: base images are pinned by the platform team"},
			{RuleID: "secrets/huggingface-token", Check: "secrets", Severity: scanners.SeverityCritical, Message: "Hugging Face token in an ENV value.", Target: "registry:registry.example.com/team/trainer:1.0", Path: "/etc/profile.d/hf.sh", Line: 2, Layer: "sha256:" + strings.Repeat("cd", 32), Evidence: "hf_Ab…xy", Fingerprint: "sha256:3333", Verification: scanners.VerificationLive},
			{RuleID: "cuda/undeclared", Check: "cuda", Severity: scanners.SeverityInfo, Message: "No CUDA version declared.", Target: "fixtures/demo", Path: "requirements.txt", Fingerprint: "sha256:4444"},
		},
		Errors: []scanners.Error{{Target: "fixtures/demo", Path: "weights/big.bin", Message: "not scanned: 3000000000 bytes is over --max-file-size (1000000000 bytes)"}},
	}
	res.Summary = scanners.Summarize(res.Findings)
	return res
}

var rules = []scanners.Rule{
	{ID: "misconfig/notebook-exposed", Check: "misconfig", Severity: scanners.SeverityCritical, Title: "Jupyter server open to the network", Why: "Anyone who reaches the port gets a shell.", Fix: "Bind to 127.0.0.1."},
	{ID: "secrets/huggingface-token", Check: "secrets", Severity: scanners.SeverityCritical, Title: "Hugging Face token", Why: "It grants access to private models.", Fix: "Revoke it and use a secret manager."},
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct{ format, file string }{
		{"text", "report.txt"},
		{"json", "report.json"},
		{"sarif", "report.sarif"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := reports.Write(&buf, tc.format, sample(), reports.Options{ToolVersion: "1.2.3", Rules: rules}); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s output differs from %s (run go test ./reports -update to accept):\n%s", tc.format, golden, buf.String())
			}
		})
	}
}

// TestJSONContract checks the field names docs/architecture.md fixes, and that fields
// that do not apply are omitted.
func TestJSONContract(t *testing.T) {
	var buf bytes.Buffer
	if err := reports.Write(&buf, "json", sample(), reports.Options{}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "targets", "findings", "errors", "summary"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing top-level %q", k)
		}
	}
	f := m["findings"].([]any)[0].(map[string]any)
	for _, k := range []string{"rule_id", "check", "severity", "message", "target", "path", "line", "evidence", "fingerprint"} {
		if _, ok := f[k]; !ok {
			t.Errorf("finding lacks %q", k)
		}
	}
	for _, k := range []string{"layer", "commit"} {
		if _, ok := f[k]; ok {
			t.Errorf("finding has %q although it does not apply", k)
		}
	}
	s := m["summary"].(map[string]any)
	if s["critical"].(float64) != 2 || s["suppressed"].(float64) != 1 {
		t.Errorf("summary %v", s)
	}
	back, err := reports.ReadJSON(bytes.NewReader(buf.Bytes()))
	if err != nil || len(back.Findings) != 4 || back.Findings[2].Severity != scanners.SeverityCritical {
		t.Errorf("ReadJSON: %v %+v", err, back)
	}
	if _, err := reports.ReadJSON(strings.NewReader(`{"version": 9}`)); err == nil {
		t.Error("ReadJSON accepted version 9")
	}
	// A clean run's lists are empty arrays, never null.
	buf.Reset()
	if err := reports.Write(&buf, "json", &scanners.Result{Version: scanners.ReportVersion}, reports.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"targets", "findings", "errors"} {
		if !strings.Contains(buf.String(), `"`+k+`": []`) {
			t.Errorf("%q is not an empty array in\n%s", k, buf.String())
		}
	}
}

func TestSARIFShape(t *testing.T) {
	var buf bytes.Buffer
	if err := reports.Write(&buf, "sarif", sample(), reports.Options{Rules: rules}); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID   string `json:"id"`
						Help struct {
							Text string `json:"text"`
						} `json:"help"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID              string            `json:"ruleId"`
				Level               string            `json:"level"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
				Locations           []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 {
		t.Fatalf("version %q runs %d", log.Version, len(log.Runs))
	}
	run := log.Runs[0]
	if len(run.Tool.Driver.Rules) != 4 || run.Tool.Driver.Rules[1].Help.Text == "" {
		t.Errorf("rules %+v", run.Tool.Driver.Rules)
	}
	r := run.Results[0]
	if r.RuleID != "misconfig/notebook-exposed" || r.Level != "error" || r.PartialFingerprints["mlwarden/v1"] != "sha256:1111" {
		t.Errorf("result %+v", r)
	}
	loc := r.Locations[0].PhysicalLocation
	if loc.ArtifactLocation.URI != "fixtures/demo/launch_notebook.sh" || loc.Region.StartLine != 3 {
		t.Errorf("location %+v", loc)
	}
}

func TestUnknownFormat(t *testing.T) {
	err := reports.Write(&bytes.Buffer{}, "xml", sample(), reports.Options{})
	if err == nil || !strings.Contains(err.Error(), "text, json, sarif") {
		t.Errorf("error %v does not list the valid formats", err)
	}
}
