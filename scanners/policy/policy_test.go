package policy

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

// docPolicies reads every yaml block of docs/policies.md that has
// policies, as the page shows them.
func docPolicies(t testing.TB) map[string]Spec {
	data, err := os.ReadFile("../../docs/policies.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Spec{}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		var doc struct {
			Policies []Spec `yaml:"policies"`
		}
		if err := yaml.Unmarshal([]byte(m[1]), &doc); err != nil {
			t.Fatalf("docs/policies.md block %q: %v", m[1], err)
		}
		for _, p := range doc.Policies {
			p.File = "docs/policies.md"
			out[p.Name] = p
		}
	}
	return out
}

const releaseSigner = "https://github.com/acme/models/.github/workflows/release.yml@refs/heads/main"

// TestDocExamples runs each example of docs/policies.md on inputs that
// must and must not violate it.
func TestDocExamples(t *testing.T) {
	specs := docPolicies(t)
	ns := func(n string) Target {
		return Target{Name: "web", Kind: "pod", Namespace: n, Labels: map[string]string{}}
	}
	dir := Target{Name: "dir:.", Kind: "dir", Labels: map[string]string{}}
	img := Target{Name: "registry:r.example/m:1", Kind: "image", Labels: map[string]string{}}
	tests := []struct {
		policy string
		in     Input
		want   bool
	}{
		{"no-noncommercial-models", Input{Target: dir, Models: []Model{{Path: "a.gguf", License: "CC-BY-NC-4.0"}}}, true},
		{"no-noncommercial-models", Input{Target: dir, Models: []Model{{Path: "a.gguf", License: "MIT"}}}, false},
		{"no-noncommercial-models", Input{Target: ns("dev-x"), Models: []Model{{License: "CC-BY-NC-4.0"}}}, false},
		{"licence-allow-list", Input{Target: ns("prod-a"), Models: []Model{{License: "Apache-2.0"}, {License: ""}}}, true},
		{"licence-allow-list", Input{Target: ns("prod-a"), Models: []Model{{License: "Apache-2.0"}, {License: "MIT"}}}, false},
		{"licence-allow-list", Input{Target: ns("dev-a"), Models: []Model{{License: "GPL-3.0-only"}}}, false},
		{"models-signed-by-release", Input{Target: img, Models: []Model{{Path: "/m/w.safetensors", Layer: "sha256:1"}}}, true},
		{"models-signed-by-release", Input{Target: img, Models: []Model{{Path: "/m/w.safetensors", Layer: "sha256:1", Signed: true, Signers: []string{"someone@example.com"}}}}, true},
		{"models-signed-by-release", Input{Target: img, Models: []Model{{Path: "/m/w.safetensors", Layer: "sha256:1", Signed: true, Signers: []string{releaseSigner}}}}, false},
		{"models-signed-by-release", Input{Target: dir, Models: []Model{{Path: "w.safetensors"}}}, false},
		{"no-latest", Input{Target: ns("prod"), Images: []Image{{Reference: "r.example/app:latest"}}}, true},
		{"no-latest", Input{Target: ns("prod"), Images: []Image{{Reference: "r.example/app"}}}, true},
		{"no-latest", Input{Target: ns("prod"), Images: []Image{{Reference: "r.example/app:1.2", Digest: "sha256:aa"}}}, false},
		{"no-latest", Input{Target: ns("dev-me"), Images: []Image{{Reference: "r.example/app:latest"}}}, false},
		{"tenant-gpu-needs-mig", Input{Target: ns("tenant-a"), Containers: []Container{{Name: "c", Limits: map[string]string{"nvidia.com/gpu": "1"}, Requests: map[string]string{}}}}, true},
		{"tenant-gpu-needs-mig", Input{Target: ns("tenant-a"), Containers: []Container{{Name: "c", Limits: map[string]string{"nvidia.com/mig-1g.10gb": "1"}, Requests: map[string]string{}}}}, false},
		{"tenant-gpu-needs-mig", Input{Target: ns("team-a"), Containers: []Container{{Name: "c", Limits: map[string]string{"nvidia.com/gpu": "1"}, Requests: map[string]string{}}}}, false},
		{"live-secret", Input{Target: dir, Findings: []Finding{{RuleID: "secrets/github-pat", Check: "secrets", Verification: "live"}}}, true},
		{"live-secret", Input{Target: dir, Findings: []Finding{{RuleID: "secrets/github-pat", Check: "secrets", Verification: "revoked"}}}, false},
		{"live-secret", Input{Target: dir, Findings: []Finding{{RuleID: "secrets/github-pat", Check: "secrets", Verification: "live", Suppressed: true}}}, false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		sp, ok := specs[tt.policy]
		if !ok {
			t.Fatalf("docs/policies.md has no policy %s", tt.policy)
		}
		seen[tt.policy] = true
		set, err := Compile([]Spec{sp}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.policy, err)
		}
		fs, errs := set.Evaluate(context.Background(), &tt.in)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", tt.policy, errs)
		}
		if got := len(fs) == 1; got != tt.want {
			t.Errorf("%s on %+v: violated %v, want %v", tt.policy, tt.in, got, tt.want)
		}
		if len(fs) == 1 && (fs[0].RuleID != "policy/"+tt.policy || fs[0].Check != scanners.CheckPolicy || fs[0].Fingerprint == "") {
			t.Errorf("%s: finding %+v", tt.policy, fs[0])
		}
	}
	for name := range specs {
		if !seen[name] {
			t.Errorf("docs/policies.md's policy %s has no test here", name)
		}
	}
}

// TestLoadErrors: what does not compile is an error naming file:line.
func TestLoadErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"syntax", "policies:\n  - name: a\n    deny: 'findings.exists(f,'\n    message: m\n", "p.yaml:3: policy a: deny:"},
		{"unknown field", "policies:\n  - name: a\n    deny: 'models.exists(m, m.licence == \"\")'\n    message: m\n", "p.yaml:3: policy a: deny: ERROR"},
		{"unknown variable", "policies:\n  - name: a\n    deny: 'pods.size() > 0'\n    message: m\n", "undeclared reference to 'pods'"},
		{"not a bool", "policies:\n  - name: a\n    warn: 'findings.size()'\n    message: m\n", "p.yaml:3: policy a: warn: the expression is a int, not a bool"},
		{"match over findings", "policies:\n  - name: a\n    match: 'findings.size() > 0'\n    deny: 'true'\n    message: m\n", "p.yaml:3: policy a: match: ERROR"},
		{"both", "policies:\n  - name: a\n    deny: 'true'\n    warn: 'true'\n    message: m\n", "line 2: policy a: want exactly one of deny and warn"},
		{"no message", "policies:\n  - name: a\n    deny: 'true'\n", "a message is required"},
		{"bad name", "policies:\n  - name: A b\n    deny: 'true'\n    message: m\n", "line 2: policy name"},
		{"unknown key", "policies:\n  - name: a\n    deny: 'true'\n    message: m\n    sev: high\n", "line 5: unknown key \"sev\""},
		{"bad severity", "policies:\n  - name: a\n    deny: 'true'\n    message: m\n    severity: urgent\n", "unknown severity"},
		{"twice", "policies:\n  - name: a\n    deny: 'true'\n    message: m\n  - name: a\n    deny: 'false'\n    message: m\n", "p.yaml:5: policy a is also defined at p.yaml:2"},
		{"other key", "policy:\n  - name: a\n", "field policy not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs, err := ParseFile("p.yaml", []byte(tt.doc))
			if err == nil {
				_, err = Compile(specs, Options{})
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// manyFindings is a target with n findings.
func manyFindings(n int) *Input {
	in := &Input{Target: Target{Name: "dir:big", Kind: "dir", Labels: map[string]string{}}}
	for i := range n {
		in.Findings = append(in.Findings, Finding{RuleID: fmt.Sprintf("secrets/rule-%d", i%50), Check: "secrets",
			Severity: "high", Path: fmt.Sprintf("f%d.py", i), Line: i, Verification: "revoked"})
	}
	return in
}

// TestCostLimit: an expression past the cost limit is an error of the
// target that names the policy, never a pass.
func TestCostLimit(t *testing.T) {
	specs := []Spec{{Name: "quadratic", Deny: "findings.exists(f, findings.exists(g, g.line == f.line + 100000))", Message: "m", File: "p.yaml", Line: 7, ExprLine: 8}}
	set, err := Compile(specs, Options{CostLimit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	fs, errs := set.Evaluate(context.Background(), manyFindings(2000))
	if len(fs) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Message, "cost limit") || !strings.Contains(errs[0].Message, "quadratic (p.yaml:7)") {
		t.Fatalf("findings %v, errors %v", fs, errs)
	}
}

// TestTimeBound: a target's policies past the time bound are errors.
func TestTimeBound(t *testing.T) {
	specs := []Spec{{Name: "slow", Deny: "findings.exists(f, findings.exists(g, g.line == f.line + 100000))", Message: "m", File: "p.yaml", Line: 1}}
	set, err := Compile(specs, Options{Timeout: time.Millisecond, CostLimit: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	_, errs := set.Evaluate(context.Background(), manyFindings(2000))
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "time bound") {
		t.Fatalf("errors %v", errs)
	}
}

// TestLargeTarget: a 2,000-finding target is judged within the defaults.
func TestLargeTarget(t *testing.T) {
	set, err := Compile(fiftyPolicies(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := manyFindings(2000)
	in.Findings[1999].Verification = "live"
	fs, errs := set.Evaluate(context.Background(), in)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(fs) != 1 || fs[0].RuleID != "policy/live-0" {
		t.Fatalf("findings %v", fs)
	}
}

// fiftyPolicies are 50 policies of the kinds docs/policies.md shows, one
// of which holds on manyFindings with a live secret.
func fiftyPolicies() []Spec {
	var out []Spec
	for i := range 10 {
		out = append(out,
			Spec{Name: fmt.Sprintf("live-%d", i), Deny: fmt.Sprintf(`findings.exists(f, f.check == "secrets" && f.verification == "live" && f.line %% 10 == %d)`, 9-i), Message: "m"},
			Spec{Name: fmt.Sprintf("licence-%d", i), Match: `target.namespace.startsWith("prod-")`, Deny: `models.exists(m, !(m.license in ["MIT", "Apache-2.0"]))`, Message: "m"},
			Spec{Name: fmt.Sprintf("latest-%d", i), Deny: `images.exists(i, i.reference.endsWith(":latest"))`, Message: "m"},
			Spec{Name: fmt.Sprintf("critical-%d", i), Warn: fmt.Sprintf(`findings.filter(f, f.severity == "critical" && f.rule_id.startsWith("vulns/%d")).size() > 3`, i), Message: "m"},
			Spec{Name: fmt.Sprintf("cuda-%d", i), Deny: `cuda.exists(c, c.verdict != "ok") || packages.exists(p, p.name == "torch" && p.version.startsWith("1."))`, Message: "m"},
		)
	}
	for i := range out {
		out[i].File, out[i].Line = "bench.yaml", i+1
	}
	return out
}

// TestInputsOf: each input field from the report it comes from.
func TestInputsOf(t *testing.T) {
	res := &scanners.Result{
		Targets: []scanners.Target{{Name: "registry:r.example/m:1", Kind: scanners.KindImage, Digest: "sha256:abc"}, {Name: "dir:.", Kind: scanners.KindDir}},
		Findings: []scanners.Finding{
			{RuleID: "secrets/x", Check: "secrets", Severity: scanners.SeverityHigh, Target: "dir:.", Path: "a.env", Line: 3, Verification: "live"},
			{RuleID: "cuda/driver-too-old", Check: "cuda", Target: "dir:.", Path: "Dockerfile", Suppressed: "ignored: x"},
			{RuleID: "vulns/python-package", Check: "vulns", Target: "dir:.", Path: "requirements.txt",
				Vulnerability: &scanners.Vulnerability{ID: "CVE-1", PURL: "pkg:pypi/torch@2.5.1"}},
		},
		Components: []scanners.Component{
			{Kind: scanners.ComponentModel, Target: "registry:r.example/m:1", Path: "/models/m/w.safetensors", Format: "safetensors", SHA256: "ff", License: "MIT", Layer: "sha256:l1"},
			{Kind: scanners.ComponentModel, Target: "registry:r.example/m:1", Path: "/other/x.gguf", Layer: "sha256:l1"},
			{Kind: scanners.ComponentSignature, Target: "registry:r.example/m:1", Path: "/models/m/model.sig", Subject: "/models/m", Signer: releaseSigner, Layer: "sha256:l1"},
			{Kind: scanners.ComponentCUDA, Target: "dir:.", Path: "Dockerfile", Version: "12.4"},
			{Kind: scanners.ComponentCUDA, Target: "dir:.", Path: "env.yaml", Version: "11.8"},
			{Kind: scanners.ComponentFramework, Target: "dir:.", Path: "requirements.txt", Name: "torch", Version: "2.5.1"},
		},
	}
	ins := InputsOf(res)
	if len(ins) != 2 {
		t.Fatalf("%d inputs", len(ins))
	}
	img, dir := ins[0], ins[1]
	check := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("image target", img.Target, Target{Name: "registry:r.example/m:1", Kind: "image", Labels: map[string]string{}})
	check("images", img.Images, []Image{{Reference: "r.example/m:1", Digest: "sha256:abc"}})
	check("models", img.Models, []Model{
		{Path: "/models/m/w.safetensors", Format: "safetensors", SHA256: "ff", License: "MIT", Signed: true, Signers: []string{releaseSigner}, Layer: "sha256:l1"},
		{Path: "/other/x.gguf", Layer: "sha256:l1"},
	})
	check("findings", dir.Findings, []Finding{
		{RuleID: "secrets/x", Check: "secrets", Severity: "high", Path: "a.env", Line: 3, Verification: "live"},
		{RuleID: "cuda/driver-too-old", Check: "cuda", Severity: "info", Path: "Dockerfile", Suppressed: true},
		{RuleID: "vulns/python-package", Check: "vulns", Severity: "info", Path: "requirements.txt"},
	})
	check("cuda", dir.CUDA, []CUDA{{Declared: "12.4", Verdict: "cuda/driver-too-old", Path: "Dockerfile"}, {Declared: "11.8", Verdict: "ok", Path: "env.yaml"}})
	check("packages", dir.Packages, []Package{{Ecosystem: "PyPI", Name: "torch", Version: "2.5.1"}})
	check("dir images", len(dir.Images), 0)
}

// TestEveryField: each declared field of the input can be named by a
// policy and has the documented type.
func TestEveryField(t *testing.T) {
	exprs := []string{
		`target.name == "" && target.kind == "" && target.namespace == "" && target.labels.size() == 0 && target.user == ""`,
		`findings.all(f, f.rule_id == "" && f.check == "" && f.severity == "" && f.path == "" && f.line == 0 && f.verification == "" && !f.suppressed)`,
		`models.all(m, m.path == "" && m.format == "" && m.sha256 == "" && m.license == "" && !m.signed && m.signers.size() == 0 && m.layer == "")`,
		`images.all(i, i.reference == "" && i.digest == "" && !i.volume)`,
		`packages.all(p, p.ecosystem == "" && p.name == "" && p.version == "")`,
		`cuda.all(c, c.declared == "" && c.verdict == "" && c.path == "")`,
		`containers.all(c, c.name == "" && c.image == "" && c.requests.size() == 0 && c.limits.size() == 0)`,
	}
	for i, e := range exprs {
		set, err := Compile([]Spec{{Name: fmt.Sprintf("f%d", i), Deny: e, Message: "m", File: "t", Line: 1}}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		in := &Input{Target: Target{Labels: map[string]string{}}}
		if fs, errs := set.Evaluate(context.Background(), in); len(fs) != 1 || len(errs) > 0 {
			t.Errorf("%s: %v %v", e, fs, errs)
		}
	}
}

// BenchmarkEvaluate: 50 policies on a target of 2,000 findings (the
// policy cost per target for docs/design/policies-compared.md), input
// built from the report included.
func BenchmarkEvaluate(b *testing.B) {
	set, err := Compile(fiftyPolicies(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{20, 2000} {
		res := &scanners.Result{Targets: []scanners.Target{{Name: "dir:big", Kind: scanners.KindDir}}}
		for _, f := range manyFindings(n).Findings {
			res.Findings = append(res.Findings, scanners.Finding{RuleID: f.RuleID, Check: f.Check, Target: "dir:big", Path: f.Path, Line: f.Line})
		}
		b.Run(fmt.Sprintf("findings=%d", n), func(b *testing.B) {
			for b.Loop() {
				for _, in := range InputsOf(res) {
					if _, errs := set.Evaluate(context.Background(), in); len(errs) > 0 {
						b.Fatal(errs)
					}
				}
			}
		})
	}
}
