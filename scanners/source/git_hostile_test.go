package source

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets"
)

// The hostile-repository tests: a repository's config, its attributes, the
// files its config includes and mlwarden's own environment all try to make
// git run a canary script, which writes a marker file if it ever runs. The
// scan must never run it, and must still find the repository's secrets.

// gitCanary writes a canary script in its own directory and returns it and
// the marker it would write.
func gitCanary(t *testing.T) (script, marker string) {
	t.Helper()
	dir := t.TempDir()
	marker = filepath.Join(dir, "ran")
	script = filepath.Join(dir, "canary.sh")
	body := fmt.Sprintf("#!/bin/sh\necho \"$0 $*\" >> %q\nexit 0\n", marker)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, marker
}

// gitAppendConfig appends raw text to the repository's .git/config (never
// through git, which would then run what it says).
func gitAppendConfig(t *testing.T, dir, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// gitHostileRepo is gitMakeRepo with, on top, a conflicting merge resolved
// by hand (so that a remerge diff runs a merge driver) and a file whose
// blob exists only in history (so that a promisor remote is asked for it
// once that blob is gone).
func gitHostileRepo(t *testing.T) (gitRepo, string) {
	r := gitMakeRepo(t)
	dir := r.dir
	gitRun(t, dir, "add", "scratch.env", ".gitignore")
	gitRun(t, dir, "commit", "-q", "-m", "scratch")
	gitWrite(t, dir, "notes.txt", "history only\n")
	gitRun(t, dir, "add", "notes.txt")
	gitRun(t, dir, "commit", "-q", "-m", "notes")
	onlyInHistory := gitRun(t, dir, "rev-parse", "HEAD:notes.txt")
	gitRun(t, dir, "rm", "-q", "notes.txt")
	gitRun(t, dir, "commit", "-q", "-m", "no notes")
	// Attributes that name drivers for every file, in every tree from here
	// and in the working tree.
	gitWrite(t, dir, ".gitattributes", "* diff=evil merge=evil filter=evil\n")
	gitWrite(t, dir, "merge.txt", "base\n")
	gitRun(t, dir, "add", ".gitattributes", "merge.txt")
	gitRun(t, dir, "commit", "-q", "-m", "attributes")
	gitRun(t, dir, "checkout", "-q", "-b", "side2")
	gitWrite(t, dir, "merge.txt", "side\n")
	gitRun(t, dir, "add", "merge.txt")
	gitRun(t, dir, "commit", "-q", "-m", "side2")
	gitRun(t, dir, "checkout", "-q", "main")
	gitWrite(t, dir, "merge.txt", "main\n")
	gitRun(t, dir, "add", "merge.txt")
	gitRun(t, dir, "commit", "-q", "-m", "main2")
	gitRun(t, dir, "-c", "merge.conflictStyle=merge", "merge", "-q", "side2", "--no-commit", "--no-ff", "-s", "ours")
	gitWrite(t, dir, "merge.txt", "resolved\n")
	gitRun(t, dir, "add", "merge.txt")
	gitRun(t, dir, "commit", "-q", "--no-edit")
	return r, onlyInHistory
}

// gitScanHostile scans ref and returns the result, errors included.
func gitScanHostile(t *testing.T, ref string) (*scanners.Result, error) {
	t.Helper()
	sec, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	src, err := OpenGit(context.Background(), ref, GitOptions{})
	if err != nil {
		return nil, err
	}
	if c, ok := src.(io.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	return scanners.NewDispatcher([]scanners.Scanner{sec}).Run(context.Background(), src), nil
}

// gitPromisor makes the repository a partial clone of url and removes a
// blob only history holds, so that git log asks the remote for it.
func gitPromisor(t *testing.T, dir, blob, url string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	gitAppendConfig(t, dir, fmt.Sprintf("[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n"+
		"[remote \"origin\"]\n\turl = %s\n\tpromisor = true\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n", url))
}

func TestGitHostileConfigRunsNothing(t *testing.T) {
	gitNeeded(t)
	type setup struct {
		r       gitRepo
		blob    string // only in history
		canary  string
		outside string // a directory outside the repository
		env     map[string]string
		ref     string // what to scan (default the repository)
		// lazy: a promisor remote is asked for a missing blob; the scan
		// then fails (exit 2), but must run nothing.
		lazy bool
	}
	cases := []struct {
		name string
		prep func(t *testing.T, s *setup)
	}{
		{"core.fsmonitor", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[core]\n\tfsmonitor = "+s.canary+"\n\tuntrackedCache = true\n")
		}},
		{"core.hooksPath", func(t *testing.T, s *setup) {
			hooks := filepath.Join(s.outside, "hooks")
			os.MkdirAll(hooks, 0o755)
			for _, h := range []string{"post-index-change", "reference-transaction", "post-checkout", "pre-auto-gc", "post-rewrite", "fsmonitor-watchman", "pre-commit", "post-merge"} {
				os.Symlink(s.canary, filepath.Join(hooks, h))
			}
			gitAppendConfig(t, s.r.dir, "[core]\n\thooksPath = "+hooks+"\n")
			// The repository's own hooks directory too.
			for _, h := range []string{"post-index-change", "reference-transaction"} {
				os.Symlink(s.canary, filepath.Join(s.r.dir, ".git", "hooks", h))
			}
		}},
		{"diff.external", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[diff]\n\texternal = "+s.canary+"\n")
		}},
		{"diff driver textconv and command", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[diff \"evil\"]\n\ttextconv = "+s.canary+"\n\tcommand = "+s.canary+"\n")
		}},
		{"filter driver", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[filter \"evil\"]\n\tclean = "+s.canary+"\n\tsmudge = "+s.canary+"\n\tprocess = "+s.canary+"\n\trequired = true\n")
		}},
		{"merge driver in a remerge diff", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[merge \"evil\"]\n\tdriver = "+s.canary+" %O %A %B\n")
		}},
		{"core.pager and pager.log", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[core]\n\tpager = "+s.canary+"\n[pager]\n\tlog = "+s.canary+"\n\tls-files = "+s.canary+"\n")
		}},
		{"gpg.program with log.showSignature", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[log]\n\tshowSignature = true\n[gpg]\n\tprogram = "+s.canary+"\n")
		}},
		{"include.path", func(t *testing.T, s *setup) {
			inc := filepath.Join(s.outside, "evil.config")
			os.WriteFile(inc, []byte("[core]\n\tfsmonitor = "+s.canary+"\n[filter \"evil\"]\n\tsmudge = "+s.canary+"\n\tclean = "+s.canary+"\n[merge \"evil\"]\n\tdriver = "+s.canary+"\n"), 0o644)
			gitAppendConfig(t, s.r.dir, "[include]\n\tpath = "+inc+"\n")
		}},
		{"includeIf", func(t *testing.T, s *setup) {
			inc := filepath.Join(s.outside, "evil.config")
			os.WriteFile(inc, []byte("[merge \"evil\"]\n\tdriver = "+s.canary+"\n[diff]\n\texternal = "+s.canary+"\n"), 0o644)
			gitAppendConfig(t, s.r.dir, "[includeIf \"gitdir:/\"]\n\tpath = "+inc+"\n[includeIf \"onbranch:main\"]\n\tpath = "+inc+"\n")
		}},
		{"core.sshCommand with an ssh promisor", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[core]\n\tsshCommand = "+s.canary+"\n")
			gitPromisor(t, s.r.dir, s.blob, "ssh://git@127.0.0.1:1/repo.git")
			s.lazy = true
		}},
		{"core.gitProxy with a git:// promisor", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[core]\n\tgitProxy = "+s.canary+"\n")
			gitPromisor(t, s.r.dir, s.blob, "git://127.0.0.1:1/repo.git")
			s.lazy = true
		}},
		{"protocol.ext.allow with an ext:: promisor", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[protocol \"ext\"]\n\tallow = always\n[protocol]\n\tallow = always\n")
			gitPromisor(t, s.r.dir, s.blob, "ext::"+s.canary)
			s.lazy = true
		}},
		{"remote uploadpack with a file:// promisor", func(t *testing.T, s *setup) {
			other := t.TempDir()
			gitRun(t, other, "init", "-q", "--bare")
			gitAppendConfig(t, s.r.dir, "[protocol \"file\"]\n\tallow = always\n")
			gitPromisor(t, s.r.dir, s.blob, "file://"+other)
			gitAppendConfig(t, s.r.dir, "[remote \"origin\"]\n\tuploadpack = "+s.canary+"\n")
			s.lazy = true
		}},
		{"credential.helper with an http promisor", func(t *testing.T, s *setup) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
				w.WriteHeader(http.StatusUnauthorized)
			}))
			t.Cleanup(func() {
				srv.Close()
				if n := hits.Load(); n > 0 {
					t.Errorf("the repository's promisor remote was contacted %d times", n)
				}
			})
			gitAppendConfig(t, s.r.dir, "[protocol \"http\"]\n\tallow = always\n[credential]\n\thelper = "+s.canary+"\n[credential \""+srv.URL+"\"]\n\thelper = "+s.canary+"\n")
			gitPromisor(t, s.r.dir, s.blob, srv.URL+"/repo.git")
			s.lazy = true
		}},
		{"safe.directory in the repository and the environment", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[safe]\n\tdirectory = *\n[core]\n\tfsmonitor = "+s.canary+"\n")
			s.env["GIT_CONFIG_PARAMETERS"] = "'safe.directory=*' 'core.fsmonitor=" + s.canary + "'"
		}},
		{"GIT_CONFIG_COUNT", func(t *testing.T, s *setup) {
			s.env["GIT_CONFIG_COUNT"] = "3"
			s.env["GIT_CONFIG_KEY_0"], s.env["GIT_CONFIG_VALUE_0"] = "core.fsmonitor", s.canary
			s.env["GIT_CONFIG_KEY_1"], s.env["GIT_CONFIG_VALUE_1"] = "diff.external", s.canary
			s.env["GIT_CONFIG_KEY_2"], s.env["GIT_CONFIG_VALUE_2"] = "core.hooksPath", filepath.Dir(s.canary)
		}},
		{"GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM", func(t *testing.T, s *setup) {
			cfg := filepath.Join(s.outside, "global.config")
			os.WriteFile(cfg, []byte("[core]\n\tfsmonitor = "+s.canary+"\n[diff]\n\texternal = "+s.canary+"\n"), 0o644)
			s.env["GIT_CONFIG_GLOBAL"], s.env["GIT_CONFIG_SYSTEM"], s.env["GIT_CONFIG_NOSYSTEM"] = cfg, cfg, ""
			s.env["HOME"] = s.outside
			os.WriteFile(filepath.Join(s.outside, ".gitconfig"), []byte("[core]\n\tfsmonitor = "+s.canary+"\n"), 0o644)
		}},
		{"GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_SSH_COMMAND, GIT_ASKPASS", func(t *testing.T, s *setup) {
			for _, k := range []string{"GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EDITOR"} {
				s.env[k] = s.canary
			}
			gitPromisor(t, s.r.dir, s.blob, "ssh://git@127.0.0.1:1/repo.git")
			s.lazy = true
		}},
		{"GIT_TRACE writes files", func(t *testing.T, s *setup) {
			marker := filepath.Join(filepath.Dir(s.canary), "ran")
			s.env["GIT_TRACE"], s.env["GIT_TRACE_PACKET"], s.env["GIT_TRACE2_EVENT"] = marker, marker, marker
		}},
		{"GIT_EXEC_PATH on a file:// clone", func(t *testing.T, s *setup) {
			exe := filepath.Join(s.outside, "exec")
			os.MkdirAll(exe, 0o755)
			for _, n := range []string{"git-upload-pack", "git-remote-http", "git-remote-https", "git-remote-file"} {
				os.Symlink(s.canary, filepath.Join(exe, n))
			}
			s.env["GIT_EXEC_PATH"] = exe
			s.ref = "file://" + s.r.dir
		}},
		{"uploadpack.packObjectsHook on a file:// clone", func(t *testing.T, s *setup) {
			gitAppendConfig(t, s.r.dir, "[uploadpack]\n\tpackObjectsHook = "+s.canary+"\n[core]\n\tfsmonitor = "+s.canary+"\n")
			s.ref = "file://" + s.r.dir
		}},
		{"GIT_DIR and GIT_WORK_TREE point elsewhere", func(t *testing.T, s *setup) {
			other := t.TempDir()
			gitRun(t, other, "init", "-q")
			gitWrite(t, other, "other.sh", "export GROQ_API_KEY="+gitFake(77, "gsk_", 52, gitAlnum)+"\n")
			gitRun(t, other, "add", ".")
			gitRun(t, other, "commit", "-q", "-m", "other")
			s.env["GIT_DIR"] = filepath.Join(other, ".git")
			s.env["GIT_WORK_TREE"] = other
			s.env["GIT_INDEX_FILE"] = filepath.Join(other, ".git", "index")
			s.env["GIT_OBJECT_DIRECTORY"] = filepath.Join(other, ".git", "objects")
			s.env["GIT_NAMESPACE"] = "hidden"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, blob := gitHostileRepo(t)
			canary, marker := gitCanary(t)
			s := &setup{r: r, blob: blob, canary: canary, outside: t.TempDir(), env: map[string]string{}}
			c.prep(t, s)
			for k, v := range s.env {
				t.Setenv(k, v)
			}
			ref := s.ref
			if ref == "" {
				ref = r.dir
			}
			res, err := gitScanHostile(t, ref)
			if b, rerr := os.ReadFile(marker); rerr == nil {
				t.Fatalf("the repository made git run %s", b)
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if s.lazy {
				// The blob is gone and its remote is never asked: history
				// is not read in full, which is an error, never a pass.
				if len(res.Errors) == 0 {
					t.Error("a missing blob gave no error")
				}
				return
			}
			for _, e := range res.Errors {
				t.Errorf("error: %v", e)
			}
			if f := gitFind(res, "train.sbatch", r.c1); f == nil {
				t.Errorf("the secret removed from history is not reported: %+v", res.Findings)
			}
			if f := gitFind(res, "deploy.sh", ""); f == nil {
				t.Errorf("the secret in the working tree (or HEAD) is not reported: %+v", res.Findings)
			}
			for _, f := range res.Findings {
				if strings.Contains(f.Path, "other.sh") {
					t.Errorf("a file of another repository is reported: %+v", f)
				}
			}
		})
	}
}

// TestGitOwnership: a repository owned by another user is refused, as git
// refuses it, whatever its config or the environment say.
func TestGitOwnership(t *testing.T) {
	gitNeeded(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the repository to another user (CI runs as root)")
	}
	r, _ := gitHostileRepo(t)
	canary, marker := gitCanary(t)
	gitAppendConfig(t, r.dir, "[safe]\n\tdirectory = *\n[core]\n\tfsmonitor = "+canary+"\n")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'safe.directory=*'")
	filepath.Walk(r.dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	_, err := gitScanHostile(t, r.dir)
	if _, rerr := os.Stat(marker); rerr == nil {
		t.Fatal("the canary ran")
	}
	if err == nil || !strings.Contains(err.Error(), "owned by another user") {
		t.Fatalf("a repository owned by another user was opened: %v", err)
	}
}

// TestGitNoEscape: nothing outside the repository is read, whether a
// tracked path goes through a directory replaced by a symlink, the config
// moves the working tree (core.worktree), or an untracked symlink points
// out. A canary secret outside must never be reported.
func TestGitNoEscape(t *testing.T) {
	gitNeeded(t)
	for _, c := range []struct {
		name string
		prep func(t *testing.T, dir, outside string)
	}{
		{"tracked directory replaced by a symlink out", func(t *testing.T, dir, outside string) {
			gitWrite(t, dir, "conf/secret.env", "nothing here\n")
			gitRun(t, dir, "add", "conf/secret.env")
			gitRun(t, dir, "commit", "-q", "-m", "conf")
			// git still lists conf/secret.env as tracked.
			os.RemoveAll(filepath.Join(dir, "conf"))
			if err := os.Symlink(filepath.Join(outside, "conf"), filepath.Join(dir, "conf")); err != nil {
				t.Fatal(err)
			}
		}},
		{"untracked symlinks out", func(t *testing.T, dir, outside string) {
			os.Symlink(outside, filepath.Join(dir, "out"))
			os.Symlink(filepath.Join(outside, "secret.env"), filepath.Join(dir, "link.env"))
		}},
		{"core.worktree out", func(t *testing.T, dir, outside string) {
			gitAppendConfig(t, dir, "[core]\n\tworktree = "+outside+"\n")
		}},
		{"a fake nested repository", func(t *testing.T, dir, outside string) {
			gitWrite(t, dir, "nested/.git/config", "[core]\n\tworktree = "+outside+"\n")
			os.Symlink(filepath.Join(outside, "secret.env"), filepath.Join(dir, "nested", "x"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			outside := t.TempDir()
			canaryTok := gitFake(99, "hf_", 34, gitAlnum)
			gitWrite(t, outside, "secret.env", "HF_TOKEN="+canaryTok+"\n")
			gitWrite(t, outside, "conf/secret.env", "HF_TOKEN="+canaryTok+"\n")
			r := gitMakeRepo(t)
			c.prep(t, r.dir, outside)
			res, err := gitScanHostile(t, r.dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Findings {
				if f.RuleID == "secrets/huggingface-token" && f.Path != "train.sbatch" {
					t.Errorf("a file outside the repository is reported: %s %s", f.Path, f.Evidence)
				}
			}
			if f := gitFind(res, "deploy.sh", ""); f == nil {
				t.Errorf("the working tree was not scanned: %+v %v", res.Findings, res.Errors)
			}
			if f := gitFind(res, "train.sbatch", r.c1); f == nil {
				t.Errorf("history was not scanned: %+v", res.Findings)
			}
		})
	}
}

// TestGitHiddenHistory: replace refs and grafts, which rewrite what git
// shows of history, do not hide a commit's secret.
func TestGitHiddenHistory(t *testing.T) {
	gitNeeded(t)
	r := gitMakeRepo(t)
	// Replace the commit that added the secret with one that did not, and
	// graft the commit after it onto nothing.
	tree := gitRun(t, r.dir, "mktree", "--missing")
	empty := gitRun(t, r.dir, "commit-tree", "-m", "empty", tree)
	gitRun(t, r.dir, "update-ref", "refs/replace/"+r.c1, empty)
	c2 := gitRun(t, r.dir, "rev-parse", "main~1")
	os.WriteFile(filepath.Join(r.dir, ".git", "info", "grafts"), []byte(c2+"\n"), 0o644)

	res, err := gitScanHostile(t, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if f := gitFind(res, "train.sbatch", r.c1); f == nil {
		t.Errorf("a replace ref or a graft hid the commit with the secret: %+v", res.Findings)
	}
}

// gitCounter wants every artifact and reads it to its end in 1 MiB reads,
// counting the bytes of each path.
type gitCounter struct {
	mu    sync.Mutex
	bytes map[string]int64
}

func (c *gitCounter) Check() string          { return "counter" }
func (c *gitCounter) Rules() []scanners.Rule { return nil }
func (c *gitCounter) Wants(a *scanners.Artifact, head []byte) bool {
	return a.Kind == scanners.ArtifactFile
}
func (c *gitCounter) Scan(ctx context.Context, a *scanners.Artifact, r scanners.Content) ([]scanners.Finding, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for off := int64(0); ; {
		m, err := r.ReadAt(buf, off)
		n += int64(m)
		off += int64(m)
		if err != nil {
			break
		}
	}
	c.mu.Lock()
	c.bytes[a.Path] = n
	c.mu.Unlock()
	return nil, nil
}

// TestGitLargeFilesBoundedMemory: a large sparse untracked file in a
// checkout and a large blob at HEAD of a clone are handed over whole,
// without being read into memory.
func TestGitLargeFilesBoundedMemory(t *testing.T) {
	gitNeeded(t)
	sparse, blob := int64(1<<30), int64(128<<20)
	if testing.Short() {
		sparse, blob = 256<<20, 32<<20
	}
	dir := t.TempDir()
	gitRun(t, dir, "init", "-q")
	gitWrite(t, dir, "README", "large files\n")
	f, err := os.Create(filepath.Join(dir, "weights.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(blob); err != nil {
		t.Fatal(err)
	}
	f.Close()
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-q", "-m", "weights")
	f, err = os.Create(filepath.Join(dir, "scratch.img")) // untracked, sparse
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(sparse); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for _, c := range []struct {
		ref  string
		want map[string]int64
	}{
		{dir, map[string]int64{"weights.bin": blob, "scratch.img": sparse}},
		{"file://" + dir, map[string]int64{"weights.bin": blob}},
	} {
		src, err := OpenGit(context.Background(), c.ref, GitOptions{NoHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		cnt := &gitCounter{bytes: map[string]int64{}}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := scanners.NewDispatcher([]scanners.Scanner{cnt}).Run(context.Background(), src)
		runtime.ReadMemStats(&after)
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		for _, e := range res.Errors {
			t.Errorf("%s: error: %v", c.ref, e)
		}
		for p, n := range c.want {
			if cnt.bytes[p] != n {
				t.Errorf("%s: %s: %d bytes handed over, want %d", c.ref, p, cnt.bytes[p], n)
			}
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("%s: %d MiB allocated for %d MiB of files: not streamed", c.ref, alloc>>20, (sparse+blob)>>20)
		}
	}
}

// TestGitLargeTextLines: the lines of a working-tree file too large to be
// held in memory are still recorded, so that a secret still in it is
// reported once, from the working tree, not again from history.
func TestGitLargeTextLines(t *testing.T) {
	gitNeeded(t)
	dir := t.TempDir()
	tok := gitFake(5, "hf_", 34, gitAlnum)
	var b strings.Builder
	for i := 0; b.Len() < 3<<20; i++ {
		fmt.Fprintf(&b, "row %d, nothing to see\r\n", i)
	}
	gitRun(t, dir, "init", "-q")
	gitWrite(t, dir, "data.csv", b.String()+"HF_TOKEN="+tok+"\r\n")
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-q", "-m", "data")
	for _, ref := range []string{dir, "file://" + dir} {
		res, _ := gitScan(t, ref, GitOptions{})
		if len(res.Findings) != 1 || res.Findings[0].Commit != "" || res.Findings[0].Path != "data.csv" {
			t.Errorf("%s: want one finding in data.csv from the working tree, got %+v", ref, res.Findings)
		}
	}
}
