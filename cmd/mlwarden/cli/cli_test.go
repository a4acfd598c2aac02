package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// run calls the command line in-process and returns its exit code and output.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(BuildInfo{Version: "test", Commit: "abc", Date: "today"}, strings.NewReader(stdin), &out, &errOut, args)
	return code, out.String(), errOut.String()
}

func scanJSON(t *testing.T, args ...string) (int, *scanners.Result) {
	t.Helper()
	code, out, errOut := run(t, "", append([]string{"scan", "--format", "json"}, args...)...)
	var res scanners.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("scan %v: exit %d, output is not JSON: %v\n%s\n%s", args, code, err, out, errOut)
	}
	return code, &res
}

const demo = "../../../fixtures/demo"

// TestDemo: every planted problem of the demo project is found, and the run
// exits 1.
func TestDemo(t *testing.T) {
	code, res := scanJSON(t, demo)
	if code != ExitFindings {
		t.Errorf("exit %d, want 1; errors: %v", code, res.Errors)
	}
	found := map[string]bool{}
	for _, f := range res.Findings {
		found[f.Path+" "+f.RuleID] = true
	}
	for _, want := range []string{
		"launch_notebook.sh misconfig/notebook-exposed",
		"Dockerfile misconfig/notebook-exposed",
		"serve.sh misconfig/service-exposed",
		"k8s/train-job.yaml misconfig/privileged-container",
		"k8s/train-job.yaml misconfig/gpu-isolation-bypass",
		"scripts/gpu_monitor.sh misconfig/crypto-miner",
		"scripts/gpu_monitor.sh misconfig/gpu-isolation-bypass",
		"Dockerfile pins/image-latest",
		"Dockerfile pins/pip-unpinned",
		"Dockerfile pins/curl-pipe-shell",
		"Dockerfile secrets/mlflow-tracking-credentials",
		"docker/config.json secrets/docker-config-auth",
		// Line 6's image is cut at '#': Slurm receives only the registry
		// host, which names no image, so pins judges none there.
		"train.sbatch misconfig/sbatch-value-truncated",
		"train.sbatch misconfig/sbatch-directive-ignored",
		"train.sbatch pins/module-unversioned",
		"train.sbatch pins/pip-extra-index-url",
		"train.py pins/trust-remote-code",
		"train.py pins/hf-revision",
		"train.py pins/torch-load-unsafe",
		"requirements.txt pins/pip-unpinned",
		"k8s/train-job.yaml pins/image-latest",
		"models/classifier.pt models/pickle-dangerous-global",
		"models/classifier.pt models/license-unknown",
		"k8s/gpu-operator-values.yaml vulns/gpu-operator",
		"k8s/gpu-operator-values.yaml vulns/container-toolkit",
		"k8s/tenant.yaml misconfig/gpu-namespace-no-default-deny",
		"k8s/tenant.yaml misconfig/gpu-namespace-no-quota",
		"k8s/tenant.yaml misconfig/gpu-pod-host-namespace",
		"k8s/tenant.yaml misconfig/gpu-namespace-pod-security",
		"k8s/tenant.yaml misconfig/gpu-namespace-no-limitrange",
	} {
		if !found[want] {
			t.Errorf("demo: no %s finding", want)
		}
	}
	if len(res.Errors) != 0 {
		t.Errorf("errors: %v", res.Errors)
	}
}

func TestDeterministic(t *testing.T) {
	_, a, _ := run(t, "", "scan", "--format", "json", demo)
	_, b, _ := run(t, "", "scan", "--format", "json", demo)
	if a != b {
		t.Error("two scans of the same input differ")
	}
	_, s1, _ := run(t, "", "scan", "--format", "sarif", demo)
	_, s2, _ := run(t, "", "scan", "--format", "sarif", demo)
	if s1 != s2 {
		t.Error("two SARIF reports of the same input differ")
	}
}

func TestExitCodes(t *testing.T) {
	clean := t.TempDir()
	os.WriteFile(filepath.Join(clean, "train.py"), []byte("print('hello')\n"), 0o644)
	badCfg := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(badCfg, []byte("checks: [secrets]\nfail-on: severe\n"), 0o644)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"clean directory", []string{"scan", clean}, ExitOK, ""},
		{"missing target", []string{"scan", filepath.Join(clean, "nope")}, ExitError, ""},
		{"no target", []string{"scan"}, ExitError, "at least one TARGET"},
		{"unknown format", []string{"scan", "--format", "xml", clean}, ExitError, "text, json, sarif"},
		{"unknown check", []string{"scan", "--checks", "secrets,virus", clean}, ExitError, "valid: secrets, pins, models, signatures, cuda, misconfig"},
		{"bad fail-on", []string{"scan", "--fail-on", "severe", clean}, ExitError, "unknown severity"},
		{"bad size", []string{"scan", "--max-file-size", "lots", clean}, ExitError, "invalid size"},
		{"invalid config", []string{"scan", "--config", badCfg, clean}, ExitError, "bad.yaml: line 2: fail-on: unknown severity"},
		{"unknown flag", []string{"scan", "--frobnicate", clean}, ExitError, "unknown flag"},
		{"fail-on none", []string{"scan", "--fail-on", "none", "--checks", "misconfig", demo}, ExitOK, ""},
		{"fail-on critical", []string{"scan", "--fail-on", "critical", "--checks", "misconfig", demo}, ExitFindings, ""},
		{"unknown command", []string{"frobnicate"}, ExitError, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", errOut, tc.stderr)
			}
		})
	}
}

// TestBadInput: odd files are scanned without crashing and without errors.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "empty.sh"), nil, 0o644)
	// Binary: more than a tenth of its head is NUL (a single NUL among text
	// no longer makes a file binary, issue 15).
	os.WriteFile(filepath.Join(dir, "nul.bin"), []byte("ab"+strings.Repeat("\x00", 16)+"cd jupyter lab --ip=0.0.0.0 --ServerApp.token=''"), 0o644)
	os.WriteFile(filepath.Join(dir, "long.txt"), bytes.Repeat([]byte("a"), 10<<20), 0o644)
	os.WriteFile(filepath.Join(dir, "latin1.sh"), []byte("echo \xe9\xff\xfe\njupyter lab --ip=0.0.0.0 --ServerApp.token=''\n"), 0o644)
	os.Symlink(".", filepath.Join(dir, "loop"))
	code, res := scanJSON(t, "--checks", "misconfig", dir)
	if len(res.Errors) != 0 {
		t.Errorf("errors: %v", res.Errors)
	}
	var paths []string
	for _, f := range res.Findings {
		paths = append(paths, f.Path)
	}
	if code != ExitFindings || strings.Join(paths, ",") != "latin1.sh" {
		t.Errorf("exit %d, findings in %v; want 1 and latin1.sh only (binary files are not text-checked)", code, paths)
	}
}

func TestOversizeIsAnError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte("a\n"), 1000), 0o644)
	code, res := scanJSON(t, "--max-file-size", "1KB", dir)
	if code != ExitError || len(res.Errors) != 1 || res.Errors[0].Path != "big.txt" {
		t.Errorf("exit %d errors %v", code, res.Errors)
	}
}

func TestStdinAndOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.json")
	code, stdout, stderr := run(t, "jupyter lab --ip=0.0.0.0 --NotebookApp.token=''\n", "scan", "--format", "json", "-o", out, "-")
	if code != ExitFindings || stdout != "" {
		t.Errorf("exit %d stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, "1 critical") {
		t.Errorf("stderr %q lacks the summary", stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(data), `"kind": "script"`) {
		t.Errorf("report: %v %s", err, data)
	}
}

func TestBaselineAndConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "nb.sh"), []byte("jupyter lab --ip=0.0.0.0 --ServerApp.token=''\n"), 0o644)
	base := filepath.Join(t.TempDir(), "base.json")
	if code, _, _ := run(t, "", "scan", "--checks", "misconfig", "--format", "json", "-o", base, dir); code != ExitFindings {
		t.Fatalf("first scan exit %d", code)
	}
	code, res := scanJSON(t, "--checks", "misconfig", "--baseline", base, dir)
	if code != ExitOK || res.Summary.Suppressed != 1 || res.Summary.Critical != 0 {
		t.Errorf("with baseline: exit %d summary %+v", code, res.Summary)
	}
	// A config file in the scanned directory is picked up.
	os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte("checks: [misconfig]\nignore:\n  - rule: misconfig/notebook-exposed\n    path: '*.sh'\n    reason: lab machine\n"), 0o644)
	code, res = scanJSON(t, dir)
	if code != ExitOK || res.Summary.Suppressed != 1 || !strings.HasSuffix(res.Findings[0].Suppressed, "own config: lab machine") {
		t.Errorf("with config: exit %d %+v", code, res.Findings)
	}
	// An expired entry no longer applies, and says so.
	os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte("checks: [misconfig]\nignore:\n  - rule: misconfig/*\n    reason: lab machine\n    expires: 2020-01-01\n"), 0o644)
	code, _, stderr := run(t, "", "scan", dir)
	if code != ExitFindings || !strings.Contains(stderr, "expired on 2020-01-01") {
		t.Errorf("expired: exit %d stderr %q", code, stderr)
	}
}

func TestRulesAndVersion(t *testing.T) {
	code, out, _ := run(t, "", "rules", "--format", "json")
	var rules []scanners.Rule
	if code != 0 || json.Unmarshal([]byte(out), &rules) != nil || len(rules) < 5 {
		t.Fatalf("rules: exit %d, %d rules", code, len(rules))
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.ID] || !strings.HasPrefix(r.ID, r.Check+"/") || r.Title == "" || r.Why == "" {
			t.Errorf("rule %+v: duplicate, or ID not under its check, or no title/why", r)
		}
		seen[r.ID] = true
	}
	code, out, _ = run(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "mlwarden test (commit abc, built today") {
		t.Errorf("version: %d %q", code, out)
	}
	code, out, _ = run(t, "", "completion", "bash")
	if code != 0 || !strings.Contains(out, "mlwarden") {
		t.Errorf("completion: exit %d", code)
	}
}

// TestScanGitleaksIgnore: a .gitleaksignore at the scanned root suppresses
// the findings it lists, as gitleaks would, and only those.
func TestScanGitleaksIgnore(t *testing.T) {
	dir := t.TempDir()
	tok := sbatchToken()
	os.WriteFile(filepath.Join(dir, "reviewed.env"), []byte("HF_TOKEN="+tok+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.env"), []byte("\nHF_TOKEN="+tok+"\n"), 0o644)
	code, res := scanJSON(t, "--checks", "secrets", dir)
	if code != ExitFindings || len(res.Findings) != 2 {
		t.Fatalf("without .gitleaksignore: exit %d, %d findings", code, len(res.Findings))
	}
	os.WriteFile(filepath.Join(dir, ".gitleaksignore"), []byte("# rotated 2026-11\nreviewed.env:huggingface-access-token:1\n"), 0o644)
	code, res = scanJSON(t, "--checks", "secrets", dir)
	var suppressed []string
	for _, f := range res.Findings {
		if f.Suppressed != "" {
			suppressed = append(suppressed, f.Path+": "+f.Suppressed)
		}
	}
	if code != ExitFindings || len(suppressed) != 1 || !strings.HasPrefix(suppressed[0], "reviewed.env: listed in .gitleaksignore") {
		t.Errorf("exit %d, suppressed %q", code, suppressed)
	}
}
