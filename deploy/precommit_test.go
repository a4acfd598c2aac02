package deploy_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/internal/integration"
)

// hook is one entry of .pre-commit-hooks.yaml, with the fields pre-commit
// requires and those this test relies on.
type hook struct {
	ID            string   `yaml:"id"`
	Name          string   `yaml:"name"`
	Entry         string   `yaml:"entry"`
	Language      string   `yaml:"language"`
	PassFilenames *bool    `yaml:"pass_filenames"`
	Types         []string `yaml:"types"`
	Stages        []string `yaml:"stages"`
	Description   string   `yaml:"description"`
}

// fakePAT is a GitHub personal access token in format only, generated from
// a seed at test time (no format-valid token is committed).
func fakePAT(seed uint64) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := []byte("ghp_")
	for range 36 {
		b = append(b, alnum[r.IntN(len(alnum))])
	}
	return string(b)
}

// TestPreCommitHook runs each hook's entry as pre-commit does — the entry's
// words, then the staged file names, in the repository's root — on a real
// git repository with a staged fake token (exit 1) and on clean staged
// files (exit 0).
func TestPreCommitHook(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".pre-commit-hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var hooks []hook
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&hooks); err != nil {
		t.Fatalf(".pre-commit-hooks.yaml: %v", err)
	}
	if len(hooks) == 0 {
		t.Fatal("no hooks")
	}
	for _, h := range hooks {
		if h.ID == "" || h.Name == "" || h.Entry == "" || h.Language == "" {
			t.Errorf("hook %+v: id, name, entry and language are required", h)
		}
		if h.PassFilenames == nil || *h.PassFilenames {
			t.Errorf("hook %s: pass_filenames must be false (--staged reads the index)", h.ID)
		}
		if !strings.HasPrefix(h.Entry, "mlwarden scan --staged ") || !strings.Contains(h.Entry, "--fail-on high") || !strings.HasSuffix(h.Entry, " .") {
			t.Errorf("hook %s: entry %q", h.ID, h.Entry)
		}
	}

	git, err := exec.LookPath("git")
	if err != nil {
		integration.Skip(t, "git", "not on PATH", "apt-get install git")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "mlwarden"), "./cmd/mlwarden")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	for _, tc := range []struct {
		name  string
		files map[string]string
		// after are the work tree's files once staged: what the hook
		// must not read.
		after map[string]string
		want  int
	}{
		{"fake token staged", map[string]string{
			"train.py":      "import os\nTOKEN = \"" + fakePAT(18) + "\"\nprint(os.getcwd())\n",
			"README.md":     "# a model\n",
			"conf/run.yaml": "lr: 0.1\n",
		}, nil, 1},
		{"clean files staged", map[string]string{
			"train.py":      "import os\nTOKEN = os.environ[\"GITHUB_TOKEN\"]\n",
			"README.md":     "# a model\n",
			"conf/run.yaml": "lr: 0.1\n",
		}, nil, 0},
		{"token staged, then edited clean in the work tree", map[string]string{
			"train.py": "import os\nTOKEN = \"" + fakePAT(18) + "\"\n",
		}, map[string]string{
			"train.py": "import os\nTOKEN = os.environ[\"GITHUB_TOKEN\"]\n",
		}, 1},
		{"clean staged, token only in the work tree", map[string]string{
			"train.py": "import os\nTOKEN = os.environ[\"GITHUB_TOKEN\"]\n",
		}, map[string]string{
			"train.py": "import os\nTOKEN = \"" + fakePAT(18) + "\"\n",
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(git, args...)
				cmd.Dir = repo
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			run("init", "-q")
			for name, content := range tc.files {
				p := filepath.Join(repo, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run("add", ".")
			staged := strings.Split(strings.TrimRight(run("diff", "--cached", "--name-only", "--diff-filter=ACMR", "-z"), "\x00"), "\x00")
			if len(staged) != len(tc.files) {
				t.Fatalf("staged %q", staged)
			}
			for name, content := range tc.after {
				if err := os.WriteFile(filepath.Join(repo, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, h := range hooks {
				words := strings.Fields(h.Entry)
				cmd := exec.Command(filepath.Join(bin, words[0]), words[1:]...)
				cmd.Dir = repo
				cmd.Env = append(os.Environ(), "NO_COLOR=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
				start := time.Now()
				out, err := cmd.CombinedOutput()
				took := time.Since(start)
				code := 0
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					code = exit.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				t.Logf("hook %s: exit %d in %s", h.ID, code, took.Round(time.Millisecond))
				if code != tc.want {
					t.Errorf("hook %s: exit %d, want %d\n%s", h.ID, code, tc.want, out)
				}
				if tc.want == 1 && (!strings.Contains(string(out), "secrets/github-pat") || strings.Contains(string(out), fakePAT(18))) {
					t.Errorf("hook %s: want the token reported, redacted:\n%s", h.ID, out)
				}
			}
		})
	}
}
