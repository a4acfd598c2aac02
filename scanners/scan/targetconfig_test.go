//go:build !mlwarden_sbatch

package scan

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func noEnvTC(string) (string, bool) { return "", false }

// tcToken is a fake Hugging Face token made from a seed at test time.
func tcToken(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed+7))
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := []byte("hf_")
	for range 34 {
		b = append(b, abc[r.IntN(len(abc))])
	}
	return string(b)
}

// tcDir is a directory with a leaked token and its own .mlwarden.yaml that
// ignores everything.
func tcDir(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "train.sh"), []byte("export HF_TOKEN="+tcToken(15)+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte("ignore:\n  - rule: \"*\"\n    reason: nothing to see here\n"), 0o644)
}

func tcRun(t *testing.T, flags map[string][]string, targets ...string) *Result {
	t.Helper()
	v, err := Configure("scan", flags, noEnvTC, targets)
	if err != nil {
		t.Fatal(err)
	}
	o, err := OptionsFrom(v)
	if err != nil {
		t.Fatal(err)
	}
	o.Checks = []string{"secrets"}
	sc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var ts []Target
	for _, r := range targets {
		ts = append(ts, Target{Ref: r})
	}
	res, err := sc.Run(context.Background(), ts...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTargetConfigShown: a scanned directory's own ignore-everything config
// is visible in the report (a note on the target, the file named in every
// suppression), and --no-target-config ignores it.
func TestTargetConfigShown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkout")
	tcDir(t, dir)
	res := tcRun(t, nil, dir)
	if len(res.Findings) == 0 {
		t.Fatal("no finding at all")
	}
	for _, f := range res.Findings {
		if !strings.Contains(f.Suppressed, filepath.Join(dir, ".mlwarden.yaml")) || !strings.Contains(f.Suppressed, "own config") {
			t.Errorf("suppression does not name the target's config: %q", f.Suppressed)
		}
	}
	noted := false
	for _, tg := range res.Targets {
		for _, n := range tg.Notes {
			noted = noted || strings.Contains(n, "its own .mlwarden.yaml") && strings.Contains(n, "1 finding(s) suppressed")
		}
	}
	if !noted {
		t.Errorf("no target note: %+v", res.Targets)
	}
	if res.Summary.Suppressed != 1 {
		t.Errorf("summary: %+v", res.Summary)
	}

	res = tcRun(t, map[string][]string{"no-target-config": {"true"}}, dir)
	if len(res.Findings) != 1 || res.Findings[0].Suppressed != "" {
		t.Errorf("--no-target-config: %+v", res.Findings)
	}
	for _, tg := range res.Targets {
		if len(tg.Notes) > 0 {
			t.Errorf("--no-target-config: note %q", tg.Notes)
		}
	}
}

// TestTargetConfigNotFromOtherSchemes: a directory that a scheme makes an
// image, a repository, a hub repository or a file never gives its
// .mlwarden.yaml, even when its name is a path that exists.
func TestTargetConfigNotFromOtherSchemes(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, scheme := range []string{"registry", "oci", "docker-archive", "git", "hf", "file"} {
		name := scheme + ":x"
		tcDir(t, name)
		v, err := Configure("scan", nil, noEnvTC, []string{name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f := v.File(); f != nil {
			t.Errorf("%s: read %s", name, f.Path)
		}
	}
	// The same directory as dir: is the user's.
	v, err := Configure("scan", nil, noEnvTC, []string{"dir:oci:x"})
	if err != nil || v.File() == nil || !v.File().FromTarget {
		t.Errorf("dir:oci:x: %v %v", v.File(), err)
	}
}
