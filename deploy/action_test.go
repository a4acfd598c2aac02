package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/internal/integration"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// action is the part of action.yml the test reads.
type action struct {
	Name   string `yaml:"name"`
	Inputs map[string]struct {
		Description string `yaml:"description"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			Name  string            `yaml:"name"`
			Uses  string            `yaml:"uses"`
			Run   string            `yaml:"run"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

// TestAction checks action.yml beyond what actionlint does (.ci/run runs
// actionlint on the workflow that uses it): the inputs users are told of,
// every uses: at a full commit with its tag as a comment, no ${{ }} inside
// a run: script (inputs reach scripts through env:, never as text), and
// shellcheck on every script.
func TestAction(t *testing.T) {
	path := filepath.Join(root, "action.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using %q, want composite", a.Runs.Using)
	}
	for _, in := range []string{"targets", "checks", "fail-on", "format", "config", "no-target-config", "version", "mode", "base-ref"} {
		if a.Inputs[in].Description == "" {
			t.Errorf("input %s missing or undescribed", in)
		}
	}
	if a.Inputs["version"].Default != "source" || a.Inputs["fail-on"].Default != "high" || a.Inputs["format"].Default != "sarif" || a.Inputs["mode"].Default != "full" {
		t.Errorf("defaults: version %q, fail-on %q, format %q", a.Inputs["version"].Default, a.Inputs["fail-on"].Default, a.Inputs["format"].Default)
	}
	pinned := regexp.MustCompile(`(?m)^\s+uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v[0-9]+(\.[0-9]+)*$`)
	uses := regexp.MustCompile(`(?m)^\s+uses:`)
	if n, m := len(uses.FindAll(data, -1)), len(pinned.FindAll(data, -1)); n == 0 || n != m {
		t.Errorf("%d uses: lines, %d of them at a full SHA with the tag as a comment", n, m)
	}
	uploads := false
	var scripts []string
	scanStep := ""
	for _, s := range a.Runs.Steps {
		uploads = uploads || strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@")
		if s.Run == "" {
			continue
		}
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %q: an expression inside run: (pass it through env:)", s.Name)
		}
		if s.Shell != "bash" {
			t.Errorf("step %q: shell %q, want bash", s.Name, s.Shell)
		}
		scripts = append(scripts, s.Run)
		if s.Name == "Scan" {
			scanStep = s.Run
		}
	}
	t.Run("scan step passes exit codes on", func(t *testing.T) { testScanStep(t, scanStep) })
	if !uploads {
		t.Error("no github/codeql-action/upload-sarif step")
	}

	// mlwarden's pins check agrees.
	sc, err := scan.New(scan.Options{Checks: []string{"pins", "secrets", "misconfig"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sc.Run(context.Background(), scan.Target{Ref: path}, scan.Target{Ref: filepath.Join(root, ".github")})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Findings {
		t.Errorf("%s:%d: %s: %s", f.Path, f.Line, f.RuleID, f.Message)
	}

	sh, err := exec.LookPath("shellcheck")
	if err != nil {
		integration.Skip(t, "shellcheck", "not on PATH", "apt-get install shellcheck")
	}
	integration.Ran(t, "shellcheck", sh)
	for i, s := range scripts {
		cmd := exec.Command(sh, "--shell=bash", "-")
		cmd.Stdin = strings.NewReader(s)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("shellcheck, script %d: %v\n%s", i, err, out)
		}
	}
}

// testScanStep runs the Scan step's script as the runner does (bash -e -o
// pipefail) with a stand-in mlwarden that exits 0, 1 or 2: the step itself
// must succeed and pass the code and the arguments on.
func testScanStep(t *testing.T, script string) {
	if script == "" {
		t.Fatal("no step named Scan")
	}
	for _, tc := range []struct{ mode, rc, newOnly string }{
		{"full", "0", ""}, {"full", "1", ""}, {"full", "2", ""},
		{"pull-request", "1", "--new-only origin/main "},
	} {
		rc := tc.rc
		dir := t.TempDir()
		bin := filepath.Join(dir, "mlwarden-bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		fake := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$RUNNER_TEMP/args\"\nexit " + rc + "\n"
		if err := os.WriteFile(filepath.Join(bin, "mlwarden"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
		cmd.Env = append(os.Environ(), "RUNNER_TEMP="+dir, "GITHUB_OUTPUT="+filepath.Join(dir, "out"),
			"TARGETS=. \n registry:example.com/a:1", "CHECKS=all", "FAIL_ON=high", "FORMAT=sarif",
			"OUTPUT=r.sarif", "CONFIG=ci/mlwarden.yaml", "NO_TARGET_CONFIG=true", "MODE="+tc.mode, "BASE_REF=main")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mlwarden exit %s: the step failed: %v\n%s", rc, err, out)
		}
		out, _ := os.ReadFile(filepath.Join(dir, "out"))
		if !strings.Contains(string(out), "exit-code="+rc+"\n") {
			t.Errorf("mlwarden exit %s: outputs %q", rc, out)
		}
		args, _ := os.ReadFile(filepath.Join(dir, "args"))
		want := "scan --checks all --fail-on high --format sarif --output r.sarif --config ci/mlwarden.yaml --no-target-config " + tc.newOnly + ". registry:example.com/a:1\n"
		if got := strings.ReplaceAll(string(args), "\n", " "); got != strings.ReplaceAll(want, "\n", " ") {
			t.Errorf("mlwarden ran with %q, want %q", got, want)
		}
	}

	// A mode the action does not know is exit 2, and mlwarden never runs.
	dir := t.TempDir()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "RUNNER_TEMP="+dir, "GITHUB_OUTPUT="+filepath.Join(dir, "out"),
		"TARGETS=.", "CHECKS=all", "FAIL_ON=high", "FORMAT=sarif", "OUTPUT=r.sarif", "CONFIG=", "NO_TARGET_CONFIG=false",
		"MODE=incremental", "BASE_REF=main")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unknown mode: the step failed: %v\n%s", err, out)
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "out")); !strings.Contains(string(out), "exit-code=2\n") {
		t.Errorf("unknown mode: outputs %q, want exit-code=2", out)
	}
}
