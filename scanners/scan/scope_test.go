package scan_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// prRepo is a pull request made in a real repository: main holds an old
// secret (baselined) and an unpinned dependency; the branch adds a secret
// in a file it later deletes (gone), then a new secret and the dependency
// pinned. The new secret's file is staged first with the secret and
// edited clean in the work tree, for --staged.
type prRepo struct {
	dir, baseline    string
	old, gone, fresh string
}

func prGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "init.defaultBranch=main", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func prWrite(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// prToken is a fake Hugging Face token from a seed.
func prToken(seed uint64) string {
	const set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	b := []byte("hf_")
	for range 34 {
		b = append(b, set[r.IntN(len(set))])
	}
	return string(b)
}

func prScan(t *testing.T, o scan.Options, target string) *scanners.Result {
	t.Helper()
	o.Checks = []string{scanners.CheckSecrets, scanners.CheckPins}
	o.Workers = 2
	o.Image.NoCache = true
	s, err := scan.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Run(context.Background(), scan.Target{Ref: target})
	if err != nil {
		t.Fatal(err)
	}
	return res.Result
}

// reported are the unsuppressed findings, as "path rule".
func reported(res *scanners.Result) []string {
	var out []string
	for _, f := range res.Findings {
		if f.Suppressed == "" {
			out = append(out, f.Path+" "+f.RuleID)
		}
	}
	slices.Sort(out)
	return out
}

func makePR(t *testing.T) prRepo {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git binary missing (apt-get install -y git)")
		}
		t.Skip("git binary missing")
	}
	dir := t.TempDir()
	r := prRepo{dir: dir, old: prToken(1), gone: prToken(2), fresh: prToken(3)}
	prGit(t, dir, "init", "-q")
	prWrite(t, dir, "config.py", "HF = \""+r.old+"\"\n")
	prWrite(t, dir, "requirements.txt", "torch\n")
	prGit(t, dir, "add", ".")
	prGit(t, dir, "commit", "-q", "-m", "base")
	// The baseline: main's findings, kept outside the tree.
	base := prScan(t, scan.Options{}, dir)
	r.baseline = filepath.Join(t.TempDir(), "baseline.json")
	f, err := os.Create(r.baseline)
	if err != nil {
		t.Fatal(err)
	}
	if err := reports.Write(f, "json", base, reports.Options{}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	prGit(t, dir, "checkout", "-q", "-b", "feature")
	prWrite(t, dir, "temp.py", "TOKEN = \""+r.gone+"\"\n")
	prGit(t, dir, "add", "temp.py")
	prGit(t, dir, "commit", "-q", "-m", "try")
	prGit(t, dir, "rm", "-q", "temp.py")
	prGit(t, dir, "commit", "-q", "-m", "oops")
	prWrite(t, dir, "app.py", "import os\n\nTOKEN = \""+r.fresh+"\"\n")
	prWrite(t, dir, "requirements.txt", "torch==2.3.1 --hash=sha256:"+strings.Repeat("ab", 32)+"\n")
	// The old secret moves down its file: the same finding.
	prWrite(t, dir, "config.py", "# settings\n\nHF = \""+r.old+"\"\n")
	prGit(t, dir, "add", "app.py", "requirements.txt", "config.py")
	return r
}

func TestScopePullRequest(t *testing.T) {
	r := makePR(t)
	want := []string{"app.py secrets/huggingface-token"}

	// Staged, then edited clean in the work tree: the index is scanned.
	prWrite(t, r.dir, "app.py", "import os\n\nTOKEN = os.environ[\"HF_TOKEN\"]\n")
	staged := prScan(t, scan.Options{Staged: true, Baseline: r.baseline}, r.dir)
	if got := reported(staged); !slices.Equal(got, want) {
		t.Errorf("--staged: %v, want %v", got, want)
	}
	if v := staged.Targets[0].VCS; v == nil || v.Scope != "staged" {
		t.Errorf("--staged: VCS %+v, want scope staged", v)
	}
	// Committed with the secret; the work tree's edit is undone.
	prGit(t, r.dir, "checkout", "--", "app.py")
	prGit(t, r.dir, "commit", "-q", "-m", "app")

	since := prScan(t, scan.Options{SinceCommit: "main", Baseline: r.baseline}, r.dir)
	if got := reported(since); !slices.Equal(got, want) {
		t.Errorf("--since-commit main on the directory: %v, want %v", got, want)
	}
	// History: the secret committed then removed in the branch is there.
	hist := prScan(t, scan.Options{SinceCommit: "main", Baseline: r.baseline}, "git:"+r.dir)
	if got, w := reported(hist), []string{"app.py secrets/huggingface-token", "temp.py secrets/huggingface-token"}; !slices.Equal(got, w) {
		t.Errorf("--since-commit main on git:: %v, want %v", got, w)
	}
	if v := hist.Targets[0].VCS; v == nil || !strings.HasPrefix(v.Scope, "since-commit ") || v.Branch != "feature" || v.Revision == "" {
		t.Errorf("--since-commit on git:: VCS %+v", v)
	}

	newOnly := prScan(t, scan.Options{NewOnly: "main"}, r.dir)
	if got := reported(newOnly); !slices.Equal(got, want) {
		t.Errorf("--new-only main on the directory: %v, want %v", got, want)
	}
	// The old secret, moved down its file, was present before.
	if n := newOnly.Summary.PresentBefore; n != 1 {
		t.Errorf("--new-only: %d present before, want 1 (the old secret)", n)
	}
	if notes := strings.Join(newOnly.Targets[0].Notes, "\n"); !strings.Contains(notes, "--new-only main") {
		t.Errorf("--new-only: notes %q name no scope", notes)
	}
	newGit := prScan(t, scan.Options{NewOnly: "main"}, "git:"+r.dir)
	if got, w := reported(newGit), []string{"app.py secrets/huggingface-token", "temp.py secrets/huggingface-token"}; !slices.Equal(got, w) {
		t.Errorf("--new-only main on git:: %v, want %v", got, w)
	}
}

func TestScopeMissingCommit(t *testing.T) {
	r := makePR(t)
	for _, o := range []scan.Options{{SinceCommit: "no-such-branch"}, {NewOnly: "no-such-branch"}} {
		for _, target := range []string{r.dir, "git:" + r.dir} {
			res := prScan(t, o, target)
			if scan.ExitCode(res, nil) != scan.ExitError || len(res.Errors) == 0 || !strings.Contains(res.Errors[0].Message, "no such commit") {
				t.Errorf("%+v %s: errors %v, want no such commit (exit 2)", o, target, res.Errors)
			}
		}
	}
}
