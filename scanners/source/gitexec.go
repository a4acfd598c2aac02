package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// How git is run.
//
// A repository is hostile input, and so is its .git directory: its config
// can name programs for git to run (core.fsmonitor, core.hooksPath,
// diff.external, textconv, filter and merge drivers, core.sshCommand,
// credential helpers, protocol.ext.allow with an ext:: promisor remote),
// pull in other files (include.path, includeIf), move the working tree
// (core.worktree) or hide history (replace refs, grafts). mlwarden runs git
// so that none of that executes anything or reaches the network:
//
//   - a clean environment: PATH and a few variables git needs, never any
//     GIT_* variable of mlwarden's own environment (GIT_DIR, GIT_CONFIG_*,
//     GIT_EXEC_PATH, GIT_SSH_COMMAND…), HOME and XDG_CONFIG_HOME in an
//     empty temporary directory, GIT_CONFIG_NOSYSTEM=1,
//     GIT_CONFIG_GLOBAL=/dev/null, no prompts, no replace objects, no
//     grafts, no lazy fetches;
//   - GIT_DIR and GIT_WORK_TREE set by mlwarden from where the .git entry
//     is, so core.worktree cannot point the working tree elsewhere;
//   - command-line overrides, which win over every config file: no
//     fsmonitor, hooks in /dev/null, cat as the pager, no external diff,
//     no signatures shown, no credential helper, and every protocol
//     refused (protocol.allow=never and protocol.<name>.allow=never for
//     each known name), except, for a clone, the scheme of the URL the
//     user named;
//   - the repository's own config read as data (`git config --list
//     --includes`, which executes nothing) and every key that names a
//     program with a name the repository chose — filter.<x>.clean,
//     smudge and process, merge.<x>.driver, diff.<x>.textconv and command,
//     credential.<url>.helper, protocol.<x>.allow — overridden on the
//     command line with a value that runs nothing (a merge driver with
//     false: git crashes on an empty one);
//   - --no-ext-diff --no-textconv on git log, --no-optional-locks and
//     --no-pager on every call.
//
// Git's own ownership check (safe.directory) is kept: a repository owned
// by another user is refused, as git refuses it.

// gitProtocols are the transports git knows by name; each is refused by
// name too, since protocol.<name>.allow in a repository's config would
// otherwise win over protocol.allow.
var gitProtocols = []string{"ext", "fd", "file", "git", "http", "https", "ssh", "testgit"}

// gitFixed are the overrides every git call gets.
var gitFixed = []string{
	"core.fsmonitor=false",
	"core.hooksPath=/dev/null",
	"core.pager=cat",
	"core.sshCommand=ssh",
	"core.askPass=true",
	"core.bigFileThreshold=" + fmt.Sprint(gitBigFile),
	"diff.external=",
	"log.showSignature=false",
	"merge.renormalize=false",
	"credential.helper=",
	"advice.graftFileDeprecated=false",
}

// gitBigFile is the size above which git treats a file as binary in a
// diff: its added lines in history are not compared line by line (the
// target says how many; the working tree's copy is scanned whole). It
// bounds the memory a history patch takes in the diff parser.
const gitBigFile = 16 << 20

// gitRunner runs git commands hardened as described above.
type gitRunner struct {
	home     string // an empty directory: HOME and XDG_CONFIG_HOME
	gitDir   string // GIT_DIR, once known
	workTree string // GIT_WORK_TREE; "" for a bare repository
	// allow is the one protocol allowed (a clone of the URL the user
	// named); "" refuses every protocol.
	allow string
	// repoKeys are the -c overrides for the repository's own keys.
	repoKeys []string
}

func newGitRunner() (*gitRunner, error) {
	home, err := os.MkdirTemp("", "mlwarden-git-home-*")
	if err != nil {
		return nil, fmt.Errorf("git: %w", err)
	}
	return &gitRunner{home: home}, nil
}

func (g *gitRunner) close() error {
	if g == nil || g.home == "" {
		return nil
	}
	return os.RemoveAll(g.home)
}

// env is the whole environment of a git process.
func (g *gitRunner) env() []string {
	env := []string{
		"HOME=" + g.home,
		"XDG_CONFIG_HOME=" + g.home,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=true",
		"SSH_ASKPASS=true",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_GRAFT_FILE=/dev/null",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_OPTIONAL_LOCKS=0",
	}
	keep := []string{"PATH", "TMPDIR"}
	if g.allow != "" {
		// A clone reaches the network as the user's shell would.
		keep = append(keep, "SSH_AUTH_SOCK", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
			"no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR")
	}
	for _, k := range keep {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if g.gitDir != "" {
		env = append(env, "GIT_DIR="+g.gitDir)
		if g.workTree != "" {
			env = append(env, "GIT_WORK_TREE="+g.workTree)
		}
	}
	return env
}

// args is the command line before the subcommand's own arguments.
func (g *gitRunner) args() []string {
	a := []string{"--no-pager", "--no-optional-locks"}
	if g.gitDir != "" && g.workTree == "" {
		a = append(a, "--bare")
	}
	for _, kv := range gitFixed {
		a = append(a, "-c", kv)
	}
	a = append(a, "-c", "protocol.allow=never")
	for _, p := range gitProtocols {
		v := "never"
		if p == g.allow {
			v = "always"
		}
		a = append(a, "-c", "protocol."+p+".allow="+v)
	}
	for _, kv := range g.repoKeys {
		a = append(a, "-c", kv)
	}
	return a
}

// command returns git with args, run in dir ("" for the repository's
// working tree or git directory).
func (g *gitRunner) command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append(g.args(), args...)...)
	cmd.Env = g.env()
	switch {
	case dir != "":
		cmd.Dir = dir
	case g.workTree != "":
		cmd.Dir = g.workTree
	case g.gitDir != "":
		cmd.Dir = g.gitDir
	}
	return cmd
}

// output runs git and returns its trimmed standard output.
func (g *gitRunner) output(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := g.bytes(ctx, dir, args...)
	return strings.TrimSpace(string(b)), err
}

func (g *gitRunner) bytes(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := g.command(ctx, dir, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && stderr.Len() > 0 {
			return out, fmt.Errorf("git %s: %s", args[0], oneLine(stderr.String(), 500))
		}
		return out, fmt.Errorf("git %s: %w", args[0], err)
	}
	return out, nil
}

// readRepoConfig reads the repository's config as data, with the files it
// includes, and overrides every key that names a program or allows a
// protocol under a name the repository chose.
func (g *gitRunner) readRepoConfig(ctx context.Context) error {
	out, err := g.bytes(ctx, "", "config", "--list", "-z", "--includes")
	if err != nil {
		// An empty config is "exit 0, nothing"; a broken one stops git
		// everywhere else too.
		return err
	}
	seen := map[string]bool{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		key, _, _ := bytes.Cut(rec, []byte{'\n'})
		k := string(key)
		if v, ok := gitOverride(k); ok && !seen[k] {
			seen[k] = true
			g.repoKeys = append(g.repoKeys, k+"="+v)
		}
	}
	return nil
}

// gitOverride returns the value that neutralises a repository's key, for
// the keys whose name the repository chooses.
func gitOverride(key string) (string, bool) {
	section, rest, ok := strings.Cut(key, ".")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return "", false // a key without a subsection: the fixed list covers those
	}
	name := strings.ToLower(rest[i+1:])
	switch strings.ToLower(section) {
	case "filter":
		if name == "clean" || name == "smudge" || name == "process" {
			return "", true
		}
		if name == "required" {
			return "false", true
		}
	case "merge":
		if name == "driver" {
			return "false", true // an empty driver crashes git 2.39
		}
	case "diff":
		if name == "textconv" || name == "command" {
			return "", true
		}
	case "credential":
		if name == "helper" {
			return "", true
		}
	case "protocol":
		if name == "allow" {
			return "never", true
		}
	case "remote":
		switch name {
		case "uploadpack":
			return "git-upload-pack", true
		case "receivepack":
			return "git-receive-pack", true
		case "proxy":
			return "", true
		}
	}
	return "", false
}

// gitDiscover locates the repository that holds path: the nearest directory at
// or above it with a .git entry (a working tree), or that is itself a git
// directory (a bare repository), as git's own discovery does. It returns
// the working tree ("" for a bare repository) and, for a bare repository,
// its directory.
func gitDiscover(path string) (work, bare string, ok bool) {
	for d := path; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, "", true
		}
		if gitIsGitDir(d) {
			return "", d, true
		}
		up := filepath.Dir(d)
		if up == d {
			return "", "", false
		}
		d = up
	}
}

// gitIsGitDir reports whether d looks like a git directory: HEAD, objects
// and refs, as git's is_git_directory checks.
func gitIsGitDir(d string) bool {
	if fi, err := os.Lstat(filepath.Join(d, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(d, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// oneLine keeps the first n bytes of s on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
