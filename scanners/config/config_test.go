package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

type sigPolicy struct {
	Images []struct {
		Match string `yaml:"match"`
	} `yaml:"images"`
}

func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown top-level key", "checkz: [secrets]\n", `line 1: unknown key "checkz" (valid keys:`},
		{"unknown secrets key", "secrets:\n  bogus-key: 1\n", `line 2: unknown key "bogus-key" in secrets (valid: config, verify, verify-timeout)`},
		{"unknown cuda key", "cuda:\n  hots: a.yaml\n", `line 2: unknown key "hots" in cuda (valid: host, inventory)`},
		{"unknown sbatch key", "sbatch:\n  spank: [x]\n", `line 2: unknown key "spank" in sbatch`},
		{"section not a mapping", "cuda: a.yaml\n", "line 1: cuda: want a mapping"},
		{"unknown ignore key", "ignore:\n  - rul: x\n    reason: r\n", `line 2: unknown key "rul"`},
		{"ignore without reason", "ignore:\n  - rule: secrets/x\n", "line 2: ignore entry needs a reason"},
		{"owner's unknown key", "signatures:\n  images:\n    - matsh: x\n", "line 3: field matsh not found"},
		{"missing host file", "cuda:\n  host: nonexistent.yaml\n", "line 2: cuda.host: " + filepath.Join(dir, "nonexistent.yaml") + ": no such file"},
		{"missing inventory", "cuda:\n  inventory: pools.yaml\n", "line 2: cuda.inventory:"},
		{"missing secrets config", "secrets:\n  config: rules.toml\n", "line 2: secrets.config:"},
		{"missing baseline", "baseline: base.json\n", "line 1: baseline:"},
		{"a directory for a file", "baseline: .\n", "is a directory"},
		{"bad severity", "\nfail-on: severe\n", "line 2: fail-on: unknown severity"},
		{"bad check", "checks: [secrets, virus]\n", `line 1: checks: unknown value "virus"`},
		{"empty checks", "checks: []\n", "line 1: checks: empty list"},
		{"checks as a mapping", "checks: {a: 1}\n", "line 1: checks: want a value or a list"},
		{"workers not a number", "workers: many\n", `line 1: workers: "many" is not a whole number`},
		{"negative workers", "workers: -1\n", "workers:"},
		{"timeout without unit", "timeout: 5\n", `line 1: timeout: "5" is not a duration`},
		{"bad size", "max-file-size: huge\n", `line 1: max-file-size: invalid size "huge"`},
		{"list for a scalar", "fail-on: [high]\n", "line 1: fail-on: want one value"},
		{"key given twice", "workers: 1\nworkers: 2\n", "line 2:"},
		{"not a mapping", "- a\n- b\n", "line 1: want a mapping"},
		{"bad YAML", "fail-on: [\n", "config " + filepath.Join(dir, FileName)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(filepath.Join(dir, FileName), []byte(tc.yaml), Owner{Key: "signatures", Into: &sigPolicy{}})
			if err == nil || !strings.HasPrefix(err.Error(), "config "+filepath.Join(dir, FileName)+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: error %v, want one naming the file and containing %q", tc.yaml, err, tc.want)
			}
		})
	}
}

// A value written in the wrong place may be a secret: errors never show it.
func TestParseErrorsHideValues(t *testing.T) {
	const secret = "s3cr3t-value-1234"
	for _, doc := range []string{
		"signatures:\n  images: " + secret + "\n",
		"ignore: " + secret + "\n",
	} {
		_, err := Parse("c.yaml", []byte(doc), Owner{Key: "signatures", Into: &sigPolicy{}})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%q: error %v shows the value", doc, err)
		}
	}
}

func TestParseGood(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a100.yaml"), []byte("driver_version: 550.54.15\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "extra.toml"), []byte(""), 0o644)
	var pol sigPolicy
	f, err := Parse(filepath.Join(dir, FileName), []byte(`# every kind of key
checks: [secrets, pins]
fail-on: medium
max-file-size: 2GiB
workers: 3
timeout: 90s
secrets:
  config: extra.toml
cuda:
  host: a100.yaml
sbatch:
  spank-options: [gpu-bind=]
signatures:
  images:
    - match: "registry.example.com/**"
ignore:
  - rule: pins/*
    reason: examples
serve:
  anything: here
`), Owner{Key: "signatures", Into: &pol}, Owner{Key: "serve", Into: &map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Ignore) != 1 || len(pol.Images) != 1 || pol.Images[0].Match != "registry.example.com/**" {
		t.Errorf("ignore %+v, signatures %+v", f.Ignore, pol)
	}
	v, err := Resolve(CmdScan, nil, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.List("checks"); strings.Join(got, ",") != "secrets,pins" {
		t.Errorf("checks %v", got)
	}
	if sev := v.Severity("fail-on"); sev == nil || *sev != scanners.SeverityMedium {
		t.Errorf("fail-on %v", sev)
	}
	if v.Size("max-file-size") != 2<<30 || v.Int("workers") != 3 || v.Duration("timeout") != 90*time.Second {
		t.Errorf("size %d workers %d timeout %s", v.Size("max-file-size"), v.Int("workers"), v.Duration("timeout"))
	}
	// Paths are relative to the config file.
	if v.String("host") != filepath.Join(dir, "a100.yaml") || v.String("secrets-config") != filepath.Join(dir, "extra.toml") {
		t.Errorf("host %q, secrets-config %q", v.String("host"), v.String("secrets-config"))
	}
	if w := v.Value("workers").Where; w != "config "+f.Path+": line 5: workers" {
		t.Errorf("workers from %q", w)
	}
}

// Flag over environment over config file over default, for every kind.
func TestResolvePrecedence(t *testing.T) {
	f, err := Parse("c.yaml", []byte("fail-on: low\nworkers: 2\nchecks: [models]\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MLWARDEN_WORKERS": "5", "MLWARDEN_CHECKS": "pins,secrets", "MLWARDEN_OUTPUT": "ignored.json"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	v, err := Resolve(CmdScan, map[string][]string{"workers": {"7"}}, lookup, f)
	if err != nil {
		t.Fatal(err)
	}
	if v.Int("workers") != 7 || v.Value("workers").Source != FromFlag {
		t.Errorf("workers %d from %s, want 7 from the flag", v.Int("workers"), v.Value("workers").Source)
	}
	if got := strings.Join(v.List("checks"), ","); got != "pins,secrets" || v.Value("checks").Source != FromEnv {
		t.Errorf("checks %s from %s, want pins,secrets from the environment", got, v.Value("checks").Source)
	}
	if sev := v.Severity("fail-on"); sev == nil || *sev != scanners.SeverityLow {
		t.Errorf("fail-on %v, want low from the file", sev)
	}
	if v.String("output") != "" {
		t.Errorf("output %q: --output is not read from the environment", v.String("output"))
	}
	if v.String("format") != "text" || v.Set("format") {
		t.Errorf("format %q", v.String("format"))
	}
	// The same setting means the same on every command; only documented
	// defaults differ.
	sb, err := Resolve(CmdSbatch, map[string][]string{"fail-on": {"none"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Severity("fail-on") != nil || strings.Join(sb.List("checks"), ",") != "secrets,pins,misconfig" || sb.Duration("timeout") != 10*time.Second {
		t.Errorf("sbatch: fail-on %v, checks %v, timeout %s", sb.Severity("fail-on"), sb.List("checks"), sb.Duration("timeout"))
	}
	for _, tc := range []struct {
		cmd   string
		flags map[string][]string
		env   map[string]string
		want  string
	}{
		{CmdScan, map[string][]string{"checks": {"virus"}}, nil, `--checks: unknown value "virus" (valid: secrets, pins, models, signatures, cuda, misconfig, vulns, node, or all)`},
		{CmdScan, map[string][]string{"checks": {""}}, nil, "--checks: empty list"},
		{CmdScan, nil, map[string]string{"MLWARDEN_FAIL_ON": "severe"}, "MLWARDEN_FAIL_ON: unknown severity"},
		{CmdScan, map[string][]string{"format": {"xml"}}, nil, `--format: unknown value "xml" (valid: text, json, sarif, cyclonedx, junit, gitlab, gitlab-secrets, html)`},
		{CmdSbatch, map[string][]string{"show": {"none"}}, nil, "--show: none is not allowed"},
		{CmdScan, map[string][]string{"config": {"/nonexistent/x.yaml"}}, nil, "--config: /nonexistent/x.yaml: no such file"},
		{CmdScan, map[string][]string{"listen": {":1"}}, nil, "--listen: not a setting of scan"},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		if _, err := Resolve(tc.cmd, tc.flags, lookup, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v %v: error %v, want %q", tc.cmd, tc.flags, tc.env, err, tc.want)
		}
	}
}

// TestTable keeps the table consistent: names unique per command, config
// keys unique, every setting on some command, choices containing defaults.
func TestTable(t *testing.T) {
	keys := map[string]string{}
	for _, s := range All() {
		if len(s.Commands) == 0 || s.Help == "" {
			t.Errorf("%s: no commands or no help", s.Name)
		}
		if s.Key != "" {
			if other, ok := keys[s.Key]; ok {
				t.Errorf("config key %s used by %s and %s", s.Key, other, s.Name)
			}
			keys[s.Key] = s.Name
		}
		for _, cmd := range s.Commands {
			ss := s.For(cmd)
			if ss.Default != "" && len(ss.Choices) > 0 && ss.Type != List {
				if !strings.Contains(","+strings.Join(ss.Choices, ",")+",", ","+ss.Default+",") {
					t.Errorf("%s on %s: default %q not among %v", s.Name, cmd, ss.Default, ss.Choices)
				}
			}
		}
	}
	for _, cmd := range []string{CmdScan, CmdSbatch, CmdServe, CmdPin, CmdRules, CmdVersion, CmdCUDA, CmdCUDAHost, CmdSweep, CmdSweepMerge} {
		seen := map[string]bool{}
		for _, s := range For(cmd) {
			if seen[s.Name] || (s.Short != "" && seen["-"+s.Short]) {
				t.Errorf("%s: %s declared twice", cmd, s.Name)
			}
			seen[s.Name], seen["-"+s.Short] = true, s.Short != ""
		}
		if _, err := Resolve(cmd, nil, nil, nil); err != nil {
			t.Errorf("%s: defaults do not resolve: %v", cmd, err)
		}
	}
}

func TestFindTargetConfig(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "evil.yaml"), []byte("ignore:\n  - rule: '*'\n    reason: hidden\n"), 0o644)
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	os.WriteFile(filepath.Join(proj, FileName), []byte("fail-on: low\n"), 0o644)
	f, err := Find("", []string{proj}, false)
	if err != nil || f == nil || !f.FromTarget {
		t.Fatalf("Find = %+v, %v", f, err)
	}
	if f, err := Find("", []string{proj}, true); err != nil || (f != nil && f.FromTarget) {
		t.Errorf("--no-target-config still read %+v (%v)", f, err)
	}
	// A config that is a symlink out of the scanned directory is refused,
	// and its content is never echoed.
	link := filepath.Join(dir, "linked")
	os.Mkdir(link, 0o755)
	os.Symlink(filepath.Join(outside, "evil.yaml"), filepath.Join(link, FileName))
	_, err = Find("", []string{link}, false)
	if err == nil || !strings.Contains(err.Error(), "leads out of") || strings.Contains(err.Error(), "hidden") {
		t.Errorf("symlinked config: %v", err)
	}
}
