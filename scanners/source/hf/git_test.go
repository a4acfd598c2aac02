//go:build !mlwarden_sbatch

package hf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/internal/integration"
)

// gitRun runs git in dir with a clean environment.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGitLFSRepository serves a repository made as the Hub stores one —
// real git, real git-lfs (the weights and pickles are LFS objects) — and
// scans it at a commit, at a tag and at a branch: the same findings as
// the working tree, and the branch and tag are pins findings that name
// the commit.
func TestGitLFSRepository(t *testing.T) {
	for _, bin := range []string{"git", "git-lfs"} {
		if _, err := exec.LookPath(bin); err != nil {
			integration.Skip(t, bin, bin+" is not on PATH", "apt-get install git git-lfs")
		}
	}
	dir := modelRepo(t)
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "lfs", "install", "--local")
	gitRun(t, dir, "lfs", "track", "*.safetensors", "*.pt", "*.pth", "*.pkl", "*.joblib", "*.npy", "*.npz", "*.h5", "*.keras", "*.gguf", "*.onnx", "*.ckpt", "*.7z", "*.gz", "*.bin")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "first")
	first := gitRun(t, dir, "rev-parse", "HEAD")
	gitRun(t, dir, "tag", "-a", "v1.0", "-m", "release")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# custom model, second commit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "commit", "-q", "-am", "second")
	second := gitRun(t, dir, "rev-parse", "HEAD")
	if out := gitRun(t, dir, "lfs", "ls-files"); !strings.Contains(out, "model.safetensors") || !strings.Contains(out, "malicious/") {
		t.Fatalf("git lfs ls-files:\n%s", out)
	}

	repo, err := hubtest.FromGit("model", "org/lfs", dir)
	if err != nil {
		t.Fatal(err)
	}
	lfs := 0
	for _, f := range repo.Commits[second] {
		if f.LFS != "" {
			lfs++
		}
	}
	if lfs < 20 {
		t.Fatalf("%d LFS files at %s", lfs, second)
	}
	srv := hubtest.New(t)
	srv.Add(repo)
	atCommit, atTag, atBranch := "hf:org/lfs@"+second, "hf:org/lfs@v1.0", "hf:org/lfs"
	res := run(t, hubOptions(srv), nil, atCommit, atTag, atBranch, dir)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	sameFindings(t, atCommit, findings(res, atCommit), findings(res, dir), "")
	for _, c := range []struct{ name, commit string }{{atTag, first}, {atBranch, second}} {
		tg := target(res, c.name)
		if tg.Digest != c.commit {
			t.Errorf("%s: digest %s, want %s", c.name, tg.Digest, c.commit)
		}
		pins := 0
		for _, f := range findings(res, c.name) {
			if f.RuleID == "pins/hub-revision-branch" {
				pins++
				if !strings.Contains(f.Message, "hf:org/lfs@"+c.commit) {
					t.Errorf("%s: the finding does not name the commit to pin: %s", c.name, f.Message)
				}
			}
		}
		if pins != 1 {
			t.Errorf("%s: %d pins/hub-revision-branch findings, want 1", c.name, pins)
		}
	}
	for _, f := range findings(res, atCommit) {
		if f.RuleID == "pins/hub-revision-branch" {
			t.Errorf("a commit is pinned: %+v", f)
		}
	}
}
