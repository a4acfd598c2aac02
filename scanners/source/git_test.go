package source

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets"
)

func gitNeeded(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git binary missing (apt-get install -y git)")
		}
		t.Skip("git binary missing")
	}
}

// gitRun runs git in dir with a fixed identity and no user configuration.
func gitRun(t *testing.T, dir string, args ...string) string {
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

func gitWrite(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitFake returns a fake token from a seed (never a committed literal).
func gitFake(seed uint64, prefix string, n int, set string) string {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := []byte(prefix)
	for range n {
		b = append(b, set[r.IntN(len(set))])
	}
	return string(b)
}

const gitAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

type gitRepo struct {
	dir                      string
	removed, branch, current string // the secrets
	c1, c3                   string // commits
}

// gitMakeRepo builds a repository: a token committed then removed on main, a
// token committed on a side branch only, a token still in a tracked file, and
// an untracked file with a token.
func gitMakeRepo(t *testing.T) gitRepo {
	dir := t.TempDir()
	r := gitRepo{dir: dir,
		removed: gitFake(1, "hf_", 34, gitAlnum),
		branch:  gitFake(2, "gsk_", 52, gitAlnum),
		current: gitFake(3, "r8_", 37, gitAlnum),
	}
	gitRun(t, dir, "init", "-q")
	gitWrite(t, dir, "train.sbatch", "#!/bin/bash\n#SBATCH -N 1\nexport HF_TOKEN="+r.removed+"\nsrun python train.py\n")
	gitWrite(t, dir, "model.safetensors", "\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-q", "-m", "train job")
	r.c1 = gitRun(t, dir, "rev-parse", "HEAD")
	gitWrite(t, dir, "train.sbatch", "#!/bin/bash\n#SBATCH -N 1\nexport HF_TOKEN=${HF_TOKEN}\nsrun python train.py\n")
	gitRun(t, dir, "commit", "-q", "-am", "read the token from the environment")
	gitRun(t, dir, "checkout", "-q", "-b", "feature")
	gitWrite(t, dir, "src/chat.py", "import groq\n\nclient = groq.Groq(api_key=\""+r.branch+"\")\n")
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-q", "-m", "chat")
	r.c3 = gitRun(t, dir, "rev-parse", "HEAD")
	gitRun(t, dir, "checkout", "-q", "main")
	gitWrite(t, dir, "deploy.sh", "export REPLICATE_API_TOKEN="+r.current+"\n")
	gitRun(t, dir, "add", "deploy.sh")
	gitRun(t, dir, "commit", "-q", "-m", "deploy")
	gitWrite(t, dir, "scratch.env", "REPLICATE_API_TOKEN="+r.current+"\n") // untracked
	gitWrite(t, dir, ".gitignore", "ignored.env\n")
	gitWrite(t, dir, "ignored.env", "REPLICATE_API_TOKEN="+r.current+"\n")
	return r
}

func gitScan(t *testing.T, ref string, o GitOptions) (*scanners.Result, scanners.Source) {
	t.Helper()
	sec, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	src, err := OpenGit(context.Background(), ref, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.(io.Closer).Close() })
	res := scanners.NewDispatcher([]scanners.Scanner{sec}).Run(context.Background(), src)
	for _, e := range res.Errors {
		t.Errorf("error: %v", e)
	}
	return res, src
}

func gitFind(res *scanners.Result, path, commit string) *scanners.Finding {
	for i, f := range res.Findings {
		if f.Path == path && f.Commit == commit {
			return &res.Findings[i]
		}
	}
	return nil
}

func TestGitLocal(t *testing.T) {
	gitNeeded(t)
	r := gitMakeRepo(t)
	res, _ := gitScan(t, r.dir, GitOptions{})
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.RuleID+" "+f.Path+":"+strconv.Itoa(f.Line)+" @"+f.Commit)
	}
	t.Logf("findings:\n%s", strings.Join(got, "\n"))

	// Removed later: reported from history, marked.
	f := gitFind(res, "train.sbatch", r.c1)
	if f == nil || f.RuleID != "secrets/huggingface-token" || f.Line != 3 || !strings.Contains(f.Message, "no longer present") {
		t.Errorf("removed secret: got %+v", f)
	}
	// Only on a side branch.
	if f := gitFind(res, "src/chat.py", r.c3); f == nil || f.RuleID != "secrets/groq-api-key" || f.Line != 3 {
		t.Errorf("side-branch secret: got %+v", f)
	}
	// Still present: reported once, from the working tree.
	if f := gitFind(res, "deploy.sh", ""); f == nil || f.Line != 1 {
		t.Errorf("current secret: got %+v", f)
	}
	if f := gitFind(res, "scratch.env", ""); f == nil {
		t.Error("untracked file not scanned")
	}
	if f := gitFind(res, "ignored.env", ""); f != nil {
		t.Error("ignored file scanned")
	}
	if len(res.Findings) != 4 {
		t.Errorf("got %d findings, want 4", len(res.Findings))
	}
}

func TestGitCloneShallow(t *testing.T) {
	gitNeeded(t)
	r := gitMakeRepo(t)
	url := "file://" + r.dir
	res, src := gitScan(t, url, GitOptions{})
	if f := gitFind(res, "train.sbatch", r.c1); f == nil || !strings.Contains(f.Message, "no longer present at HEAD") {
		t.Errorf("clone: removed secret not reported: %+v", f)
	}
	if f := gitFind(res, "deploy.sh", ""); f == nil {
		t.Error("clone: HEAD tree not scanned")
	}
	if f := gitFind(res, "scratch.env", ""); f != nil {
		t.Error("clone: untracked file of the source checkout seen")
	}
	if tg := src.Target(); tg.Kind != scanners.KindRepo || tg.Name != "git:"+url || len(tg.Notes) == 0 {
		t.Errorf("target %+v", tg)
	}

	res, src = gitScan(t, url, GitOptions{Depth: 1})
	shallow := false
	for _, n := range src.Target().Notes {
		shallow = shallow || strings.Contains(n, "shallow")
	}
	if !shallow {
		t.Errorf("shallow clone not noted: %v", src.Target().Notes)
	}
	if f := gitFind(res, "train.sbatch", r.c1); f != nil {
		t.Error("shallow clone scanned history it does not have")
	}
}

func TestGitErrors(t *testing.T) {
	gitNeeded(t)
	if _, err := OpenGit(context.Background(), t.TempDir(), GitOptions{}); err == nil {
		t.Error("a plain directory opened as a repository")
	}
	if got := gitRedact("https://bot:s3cr3tpassw0rd@git.example.org/r.git"); strings.Contains(got, "s3cr3t") {
		t.Errorf("password kept: %s", got)
	}
	src, err := OpenGit(context.Background(), "file:///nonexistent/mlwarden/repo.git", GitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Walk(context.Background(), nil); err == nil {
		t.Error("clone of a missing repository succeeded")
	}
}
func TestGitEmptyRepo(t *testing.T) {
	gitNeeded(t)
	dir := t.TempDir()
	gitRun(t, dir, "init", "-q")
	gitWrite(t, dir, "run.sh", "export GROQ_API_KEY="+gitFake(9, "gsk_", 52, gitAlnum)+"\n")
	sec, _ := secrets.New()
	src, err := OpenGit(context.Background(), dir, GitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := scanners.NewDispatcher([]scanners.Scanner{sec}).Run(context.Background(), src)
	if len(res.Errors) != 0 || len(res.Findings) != 1 {
		t.Fatalf("errors %v findings %d", res.Errors, len(res.Findings))
	}
}

// TestGitMergeCommits checks that lines written in merge commits themselves
// (a conflict resolution, a line added while merging) are scanned: no
// parent's commit holds them, and plain git log shows merges without a diff.
func TestGitMergeCommits(t *testing.T) {
	gitNeeded(t)
	dir := t.TempDir()
	inResolution := gitFake(11, "hf_", 34, gitAlnum)
	inCleanMerge := gitFake(12, "r8_", 37, gitAlnum)
	gitRun(t, dir, "init", "-q")
	gitWrite(t, dir, "job.sbatch", "#!/bin/bash\nexport MODEL=base\nsrun python train.py\n")
	gitWrite(t, dir, "deploy.sh", "#!/bin/sh\necho deploy\n")
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-q", "-m", "init")
	gitRun(t, dir, "checkout", "-q", "-b", "side")
	gitWrite(t, dir, "job.sbatch", "#!/bin/bash\nexport MODEL=side\nsrun python train.py\n")
	gitRun(t, dir, "commit", "-q", "-am", "side model")
	gitRun(t, dir, "checkout", "-q", "main")
	gitWrite(t, dir, "job.sbatch", "#!/bin/bash\nexport MODEL=main\nsrun python train.py\n")
	gitRun(t, dir, "commit", "-q", "-am", "main model")
	// A conflicting merge, resolved with a token.
	cmd := exec.Command("git", "-C", dir, "-c", "commit.gpgSign=false", "merge", "-q", "side")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "CONFLICT") {
		t.Fatalf("merge did not conflict: %v\n%s", err, out)
	}
	gitWrite(t, dir, "job.sbatch", "#!/bin/bash\nexport MODEL=main\nexport HF_TOKEN="+inResolution+"\nsrun python train.py\n")
	gitRun(t, dir, "add", "job.sbatch")
	gitRun(t, dir, "commit", "-q", "--no-edit")
	resolution := gitRun(t, dir, "rev-parse", "HEAD")
	// A clean merge with a line slipped in before committing it.
	gitRun(t, dir, "checkout", "-q", "-b", "other", "HEAD~1")
	gitWrite(t, dir, "README", "docs\n")
	gitRun(t, dir, "add", "README")
	gitRun(t, dir, "commit", "-q", "-m", "docs")
	gitRun(t, dir, "checkout", "-q", "main")
	gitRun(t, dir, "merge", "-q", "--no-ff", "--no-commit", "other")
	gitWrite(t, dir, "deploy.sh", "#!/bin/sh\nexport REPLICATE_API_TOKEN="+inCleanMerge+"\necho deploy\n")
	gitRun(t, dir, "add", "deploy.sh")
	gitRun(t, dir, "commit", "-q", "--no-edit")
	evil := gitRun(t, dir, "rev-parse", "HEAD")
	// Both removed afterwards: only history holds them.
	gitWrite(t, dir, "job.sbatch", "#!/bin/bash\nexport MODEL=main\nsrun python train.py\n")
	gitWrite(t, dir, "deploy.sh", "#!/bin/sh\necho deploy\n")
	gitRun(t, dir, "commit", "-q", "-am", "tokens from the environment")

	res, src := gitScan(t, dir, GitOptions{})
	if f := gitFind(res, "job.sbatch", resolution); f == nil || f.RuleID != "secrets/huggingface-token" || f.Line != 3 {
		t.Errorf("token in a conflict resolution: got %+v\nall: %+v", f, res.Findings)
	}
	if f := gitFind(res, "deploy.sh", evil); f == nil || f.RuleID != "secrets/replicate-api-token" || f.Line != 2 {
		t.Errorf("token added while merging: got %+v\nall: %+v", f, res.Findings)
	}
	if len(res.Findings) != 2 {
		t.Errorf("got %d findings, want 2: %+v", len(res.Findings), res.Findings)
	}
	if ok, v := remergeDiff(context.Background(), src.(*gitSource).git); !ok {
		t.Errorf("git %s has no remerge diff", v)
	}
	for _, n := range src.Target().Notes {
		if strings.Contains(n, "merge") {
			t.Errorf("unexpected note %q", n)
		}
	}
}

func TestDropRemergeHeaders(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the filter's buffer
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"diff --git a/f b/f\nremerge CONFLICT (content): Merge conflict in f\nindex 1..2 100644\n", "diff --git a/f b/f\nindex 1..2 100644\n"},
		{"+remerge stays (an added line)\n    remerge stays (a commit message)\n", "+remerge stays (an added line)\n    remerge stays (a commit message)\n"},
		{"+" + long + "\nremerge x\nend", "+" + long + "\nend"},
		{"remerge CONFLICT at the end without newline", ""},
	} {
		got, err := io.ReadAll(dropRemergeHeaders(strings.NewReader(tt.in)))
		if err != nil || string(got) != tt.want {
			t.Errorf("dropRemergeHeaders(%.40q) = %.40q, %v; want %.40q", tt.in, got, err, tt.want)
		}
	}
}
