package deploy_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/integration"
)

// TestPreCommitReal installs the hooks with the real pre-commit (Debian's,
// 3.0 in CI; any other on PATH): a repository holding this checkout's
// .pre-commit-hooks.yaml is the hooks' repo, a project repository's
// .pre-commit-config.yaml names it at its commit, `pre-commit install` and
// `pre-commit install-hooks` load the whole manifest (3.0 refused it for
// stage names it did not know), and then a commit that stages a fake token
// is refused while a clean one passes. The system hook runs the mlwarden
// built from this checkout; the golang hook is loaded and validated with
// the manifest but not built (its go install would fetch every module into
// pre-commit's own GOPATH).
func TestPreCommitReal(t *testing.T) {
	pc, err := exec.LookPath("pre-commit")
	if err != nil {
		integration.Skip(t, "pre-commit", "not on PATH", "apt-get install pre-commit")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		integration.Skip(t, "git", "not on PATH", "apt-get install git")
	}
	ver, _ := exec.Command(pc, "--version").CombinedOutput()
	integration.Ran(t, "pre-commit", strings.TrimSpace(string(ver)))

	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "mlwarden"), "./cmd/mlwarden")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(os.Environ(),
		"HOME="+tmp, "GIT_CONFIG_NOSYSTEM=1", "PRE_COMMIT_HOME="+filepath.Join(tmp, "pre-commit"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid",
		"NO_COLOR=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(dir string, wantOK bool, name string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
		if wantOK && err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out), err
	}

	// The hooks' repository: this checkout's manifest, committed.
	hooks := filepath.Join(tmp, "hooks")
	os.MkdirAll(hooks, 0o755)
	manifest, err := os.ReadFile(filepath.Join(root, ".pre-commit-hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(hooks, ".pre-commit-hooks.yaml"), manifest, 0o644)
	run(hooks, true, git, "init", "-q")
	run(hooks, true, git, "add", ".")
	run(hooks, true, git, "commit", "-q", "-m", "hooks")
	rev, _ := run(hooks, true, git, "rev-parse", "HEAD")

	proj := filepath.Join(tmp, "proj")
	os.MkdirAll(proj, 0o755)
	run(proj, true, git, "init", "-q")
	cfg := "repos:\n  - repo: " + hooks + "\n    rev: " + strings.TrimSpace(rev) + "\n    hooks:\n      - id: mlwarden-system\n"
	os.WriteFile(filepath.Join(proj, ".pre-commit-config.yaml"), []byte(cfg), 0o644)
	if out, _ := run(proj, true, pc, "install"); !strings.Contains(out, "installed") {
		t.Fatalf("pre-commit install: %s", out)
	}
	if out, _ := run(proj, true, pc, "install-hooks"); strings.Contains(out, "WARNING") {
		t.Errorf("pre-commit install-hooks warns:\n%s", out)
	}
	// The golang hook's entry validates too: pre-commit validates the
	// manifest it read, here with every hook of it.
	if out, _ := run(proj, true, pc, "validate-manifest", filepath.Join(hooks, ".pre-commit-hooks.yaml")); strings.Contains(out, "WARNING") {
		t.Errorf("pre-commit validate-manifest warns:\n%s", out)
	}
	run(proj, true, git, "add", ".pre-commit-config.yaml")
	run(proj, true, git, "commit", "-q", "-m", "pre-commit config")

	// A token staged: the commit is refused, the token reported redacted.
	os.WriteFile(filepath.Join(proj, "train.py"), []byte("import os\nTOKEN = \""+fakePAT(37)+"\"\n"), 0o644)
	run(proj, true, git, "add", "train.py")
	out, err := run(proj, false, git, "commit", "-m", "a token")
	if err == nil {
		t.Fatalf("a commit staging a token went through:\n%s", out)
	}
	if !strings.Contains(out, "secrets/github-pat") || strings.Contains(out, fakePAT(37)) {
		t.Errorf("want the token reported, redacted:\n%s", out)
	}
	if log, _ := run(proj, true, git, "log", "--oneline"); strings.Contains(log, "a token") {
		t.Errorf("the commit landed: %s", log)
	}
	// Staged with a token, then edited clean in the work tree only: what
	// would be committed is the index's copy, and it is refused.
	os.WriteFile(filepath.Join(proj, "train.py"), []byte("import os\nTOKEN = \""+fakePAT(37)+"\"\n"), 0o644)
	run(proj, true, git, "add", "train.py")
	os.WriteFile(filepath.Join(proj, "train.py"), []byte("import os\nTOKEN = os.environ[\"GITHUB_TOKEN\"]\n"), 0o644)
	if out, err := run(proj, false, git, "commit", "-m", "a token, hidden"); err == nil {
		t.Fatalf("a commit staging a token edited clean in the work tree went through:\n%s", out)
	}
	// Cleaned: the same commit passes.
	os.WriteFile(filepath.Join(proj, "train.py"), []byte("import os\nTOKEN = os.environ[\"GITHUB_TOKEN\"]\n"), 0o644)
	run(proj, true, git, "add", "train.py")
	if out, err := run(proj, false, git, "commit", "-m", "clean"); err != nil {
		t.Fatalf("a clean commit was refused: %v\n%s", err, out)
	}
}
