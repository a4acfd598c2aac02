package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/gitleaks/go-gitdiff/gitdiff"

	"github.com/mlwarden/mlwarden/scanners"
)

// GitOptions configures the git source.
type GitOptions struct {
	// MaxFileSize is the largest working-tree file handed over; a larger one
	// is reported as an error. 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// Depth, when positive, makes the clone of a remote repository shallow
	// (the report then says that older history was not scanned).
	Depth int
	// NoHistory scans the working tree only.
	NoHistory bool
	// Since, when set, scans only the commits after it: what
	// `git log Since..HEAD` lists, merges' own changes included, and no
	// tree (--since-commit).
	Since string
	// At, when set, scans the repository as it was at this commit: its
	// tree read from the object store (never checked out) and the history
	// that reaches it (the base of --new-only).
	At string
}

// gitSource is a repository: its working tree (the files on disk for a local
// checkout, the HEAD tree for a bare repository or a clone) and the lines
// every commit on every ref added.
type gitSource struct {
	name   string // "git:" + the reference, without any password
	ref    string // the path or URL as given
	remote bool
	scheme string // a remote's transport, the only one git may use
	o      GitOptions
	git    *gitRunner

	mu    sync.Mutex
	notes []string
	vcs   *scanners.VCS
	// root is a local checkout's working tree, handed to checks as
	// Artifact.FS for the working tree's files (nil for clones).
	root   *os.Root
	rootFS fs.FS
}

// FS is a local checkout's working tree once walked (nil for clones).
func (s *gitSource) FS() fs.FS { return s.rootFS }

// Close releases the working tree's root and git's empty home, once the
// run is over.
func (s *gitSource) Close() error {
	err := s.git.close()
	if s.root != nil {
		if cerr := s.root.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// gitSCPLike matches scp-style remotes such as git@host:org/repo.git.
var gitSCPLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:`)

// gitSchemes are the transports a remote target may use.
var gitSchemes = []string{"https", "http", "ssh", "git", "file"}

// OpenGit opens a git repository as a source: a local path (read in place) or
// a remote URL (cloned with the git binary into a temporary directory when
// walked; git talks only to the host in the URL). Every file of the working
// tree is a file artifact; every commit's added lines in one file are a
// patch artifact, marked when the lines are no longer in the working tree.
// Git runs so that nothing in the repository can make it execute a program
// (see gitexec.go).
func OpenGit(ctx context.Context, ref string, o GitOptions) (scanners.Source, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("git target %s: the git binary is needed: %w", gitRedact(ref), err)
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	s := &gitSource{name: "git:" + gitRedact(ref), ref: ref, o: o}
	if scheme, _, ok := strings.Cut(ref, "://"); ok || gitSCPLike.MatchString(ref) {
		if !ok {
			scheme = "ssh"
		}
		scheme = strings.ToLower(scheme)
		if !slices.Contains(gitSchemes, scheme) {
			return nil, fmt.Errorf("git target %s: transport %q is not allowed (%s)", s.name, scheme, strings.Join(gitSchemes, ", "))
		}
		g, err := newGitRunner()
		if err != nil {
			return nil, err
		}
		s.remote, s.scheme, s.git = true, scheme, g
		return s, nil
	}
	abs, err := filepath.Abs(ref)
	if err != nil {
		return nil, fmt.Errorf("git target %s: %w", ref, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("git target: %w", err)
	}
	work, bare, ok := gitDiscover(abs)
	if !ok {
		return nil, fmt.Errorf("git target %s: not a git repository (no .git at or above it)", ref)
	}
	g, err := newGitRunner()
	if err != nil {
		return nil, err
	}
	s.git = g
	if err := s.locate(ctx, work, bare); err != nil {
		g.close()
		return nil, fmt.Errorf("git target %s: %w", ref, err)
	}
	return s, nil
}

// locate sets the git directory and the working tree from where the .git
// entry is, never from the repository's config (core.worktree), and reads
// the repository's config as data.
func (s *gitSource) locate(ctx context.Context, work, bare string) error {
	g := s.git
	// Git checks that the repository belongs to this user (safe.directory)
	// only when it finds the repository itself, not with GIT_DIR set: ask
	// it once that way, before pinning GIT_DIR and GIT_WORK_TREE.
	at := work
	if bare != "" {
		at = bare
	}
	if _, err := g.output(ctx, at, "rev-parse", "--git-dir"); err != nil {
		if strings.Contains(err.Error(), "dubious ownership") {
			return fmt.Errorf("the repository is owned by another user, and git refuses to read it (safe.directory): run mlwarden as its owner, or scan a copy")
		}
		return fmt.Errorf("not a git repository: %w", err)
	}
	switch {
	case bare != "":
		g.gitDir = bare
		s.ref = bare
	default:
		dot := filepath.Join(work, ".git")
		fi, err := os.Lstat(dot)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			g.gitDir = dot
		case fi.Mode().IsRegular():
			// A linked worktree's or a submodule's "gitdir: PATH".
			dir, err := gitDirFile(dot)
			if err != nil {
				return err
			}
			g.gitDir = dir
			s.note("the repository's git directory is " + dir + ", outside the working tree (a linked worktree or a submodule)")
		default:
			return fmt.Errorf("%s is neither a directory nor a gitdir file", dot)
		}
		g.workTree = work
		s.ref = work
	}
	if _, err := g.output(ctx, "", "rev-parse", "--git-dir"); err != nil {
		return fmt.Errorf("not a git repository: %w", err)
	}
	return g.readRepoConfig(ctx)
}

// gitDirFile reads a .git file ("gitdir: PATH", relative to its directory).
func gitDirFile(dot string) (string, error) {
	f, err := os.Open(dot)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", err
	}
	rest, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s: not a gitdir file", dot)
	}
	dir := strings.TrimSpace(rest)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(dot), dir)
	}
	if !gitIsGitDir(dir) {
		return "", fmt.Errorf("%s: %s is not a git directory", dot, dir)
	}
	return filepath.Clean(dir), nil
}

// gitRedact drops the password from a URL so that it never reaches a report.
func gitRedact(ref string) string {
	u, err := url.Parse(ref)
	if err != nil || u.User == nil {
		return ref
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	}
	return u.String()
}

func (s *gitSource) Target() scanners.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := scanners.Target{Name: s.name, Kind: scanners.KindRepo, Notes: append([]string(nil), s.notes...)}
	if s.vcs != nil {
		v := *s.vcs
		t.VCS = &v
	}
	return t
}

func (s *gitSource) note(n string) {
	s.mu.Lock()
	s.notes = append(s.notes, n)
	s.mu.Unlock()
}

func (s *gitSource) Walk(ctx context.Context, sink scanners.Sink) error {
	g := s.git
	if s.remote {
		tmp, err := os.MkdirTemp("", "mlwarden-git-*")
		if err != nil {
			return fmt.Errorf("clone: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir := filepath.Join(tmp, "repo.git")
		if err := s.clone(ctx, dir); err != nil {
			return err
		}
		g.gitDir, g.workTree = dir, ""
		if err := g.readRepoConfig(ctx); err != nil {
			return err
		}
	}
	bare := g.workTree == ""
	head, err := g.output(ctx, "", "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		head = "" // an empty repository
	}
	if head != "" && s.o.At == "" {
		s.note("HEAD is " + head)
	}
	if shallow, _ := g.output(ctx, "", "rev-parse", "--is-shallow-repository"); shallow == "true" {
		s.note("shallow clone: commits before the shallow boundary were not scanned; fetch with --unshallow to scan the whole history")
	}
	s.setVCS(ctx, head)
	switch {
	case s.o.At != "":
		at, err := resolveCommit(ctx, g, "--new-only", s.o.At)
		if err != nil {
			return err
		}
		s.vcsScope(at, "new-only base "+at)
		s.note(fmt.Sprintf("the base of --new-only: the repository as it was at %s (%s), its tree read from the object store and the history that reaches it", s.o.At, at))
		current := newGitLines()
		if err := s.walkTree(ctx, sink, current, at); err != nil || s.o.NoHistory {
			return err
		}
		return s.walkHistory(ctx, sink, current, "at "+at[:12], []string{at})
	case s.o.Since != "":
		since, err := resolveCommit(ctx, g, "--since-commit", s.o.Since)
		if err != nil {
			return err
		}
		s.vcsScope(head, "since-commit "+since)
		s.note(fmt.Sprintf("scope: only the commits after %s (%s), what git log %s..HEAD lists, merges' own changes included; the tree and older history were not scanned", s.o.Since, since, since[:12]))
		if head == "" {
			return nil
		}
		return s.walkHistory(ctx, sink, nil, "", []string{since + "..HEAD"})
	}

	current := newGitLines()
	if bare {
		if head != "" {
			err = s.walkTree(ctx, sink, current, "HEAD")
		}
	} else {
		err = s.walkCheckout(ctx, sink, current)
	}
	if err != nil || s.o.NoHistory {
		return err
	}
	where := "in the working tree"
	if bare {
		where = "at HEAD"
	}
	return s.walkHistory(ctx, sink, current, where, []string{"--all"})
}

// clone makes a bare clone of the remote with the one transport its URL
// names. Redirects are refused so that git talks only to the host the user
// named, prompts are off, and no hooks or submodules run.
func (s *gitSource) clone(ctx context.Context, dir string) error {
	g := *s.git
	g.gitDir, g.workTree, g.repoKeys, g.allow = "", "", nil, s.scheme
	args := []string{"-c", "http.followRedirects=false", "clone", "--bare", "--quiet", "--no-tags"}
	if s.o.Depth > 0 {
		args = append(args, "--depth", strconv.Itoa(s.o.Depth), "--no-single-branch")
	}
	args = append(args, "--", s.ref, dir)
	cmd := g.command(ctx, g.home, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := oneLine(stderr.String(), 500)
		if u, perr := url.Parse(s.ref); perr == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && p != "" {
				msg = strings.ReplaceAll(msg, p, "REDACTED")
			}
		}
		return fmt.Errorf("clone %s: %v: %s", s.name, err, msg)
	}
	// A bare clone's refs/heads are every branch of the remote.
	return nil
}

// gitSmall is the largest file or blob read into memory; larger ones are
// handed over as a file or a stream, so that memory does not grow with
// them.
const gitSmall = 1 << 20

// walkCheckout hands over the files of a local checkout that git tracks or
// would track (untracked but not ignored), read from disk as they are now,
// inside the working tree only.
func (s *gitSource) walkCheckout(ctx context.Context, sink scanners.Sink, current *gitLines) error {
	out, err := s.git.bytes(ctx, "", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
	if err != nil {
		return err
	}
	if s.root == nil {
		if s.root, err = os.OpenRoot(s.git.workTree); err != nil {
			return fmt.Errorf("open working tree: %w", err)
		}
		s.rootFS = s.root.FS()
	}
	for rel := range bytes.SplitSeq(out, []byte{0}) {
		if len(rel) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		s.checkoutFile(ctx, sink, string(rel), current)
	}
	return nil
}

// checkoutFile hands over one file of the working tree. It is opened
// through the working tree's os.Root, so that a path under a symlinked
// directory that leads out of the repository is never read, and only when
// it is still the regular file that was listed (never a symlink, never a
// FIFO a writer could hold open).
func (s *gitSource) checkoutFile(ctx context.Context, sink scanners.Sink, rel string, current *gitLines) {
	fi, err := s.root.Lstat(rel)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) && !isEscape(err) {
			sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("stat: %s", errMsg(err))})
		}
		return // deleted since, or under a symlink that leaves the tree
	}
	if !fi.Mode().IsRegular() {
		return // a symlink or a submodule
	}
	if fi.Size() > s.o.MaxFileSize {
		sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("not scanned: %d bytes is over --max-file-size (%d bytes)", fi.Size(), s.o.MaxFileSize)})
		return
	}
	f, st, err := openRegular(func(flag int) (*os.File, error) { return s.root.OpenFile(rel, flag, 0) })
	if err != nil {
		if !isEscape(err) {
			sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("open: %s", errMsg(err))})
		}
		return
	}
	if f == nil || !os.SameFile(fi, st) {
		if f != nil {
			f.Close()
		}
		return // swapped since it was listed
	}
	defer f.Close()
	a := &scanners.Artifact{
		Kind:       scanners.ArtifactFile,
		Target:     s.name,
		TargetKind: scanners.KindRepo,
		Path:       rel,
		Size:       st.Size(),
		Mode:       st.Mode(),
		FS:         s.rootFS,
	}
	if st.Size() <= gitSmall {
		data, err := io.ReadAll(io.LimitReader(f, gitSmall))
		if err != nil {
			sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("read: %s", errMsg(err))})
			return
		}
		a.Size = int64(len(data))
		s.hand(sink, a, data, current)
		return
	}
	// Large: the lines are recorded in a pass of their own over the file
	// (text only), and the file itself is handed over to be read in place.
	head := make([]byte, 8000)
	n, _ := f.ReadAt(head, 0)
	if !scanners.IsBinary(head[:n]) {
		w := current.adder(rel)
		_, err := io.Copy(w, io.NewSectionReader(f, 0, st.Size()))
		w.Close()
		if err != nil {
			sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("read: %s", errMsg(err))})
			return
		}
	}
	if err := sink.Artifact(a, f); err != nil && ctx.Err() == nil {
		sink.Error(scanners.Error{Target: s.name, Path: rel, Message: err.Error()})
	}
}

// hand gives one file of the working tree, or of HEAD's tree, held in
// memory to the sink, recording its lines.
func (s *gitSource) hand(sink scanners.Sink, a *scanners.Artifact, data []byte, current *gitLines) {
	if current != nil && !scanners.IsBinary(data) {
		current.addData(a.Path, data)
	}
	if err := sink.Artifact(a, bytes.NewReader(data)); err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: a.Path, Message: err.Error()})
	}
}

// walkTree hands over the files of a commit's tree (HEAD's for bare
// repositories and clones), read with one `git cat-file --batch`: blobs up
// to gitSmall in memory, larger ones as a stream that the dispatcher
// spools.
func (s *gitSource) walkTree(ctx context.Context, sink scanners.Sink, current *gitLines, treeish string) error {
	entries, err := s.treeEntries(ctx, "", treeish)
	if err != nil {
		return err
	}
	return s.readBlobs(ctx, sink, current, entries, s.name, scanners.KindRepo, nil)
}

// gitEntry is one blob of a tree or of the index; size is -1 when not
// known before the blob is read.
type gitEntry struct {
	mode, oid, path string
	size            int64
}

// treeEntries lists the blobs of treeish: the whole tree when dir is "",
// else those under dir (a directory of the working tree), named relative
// to it.
func (s *gitSource) treeEntries(ctx context.Context, dir, treeish string) ([]gitEntry, error) {
	args := []string{"ls-tree", "-r", "-z", "-l"}
	if dir == "" {
		args = append(args, "--full-tree")
	}
	out, err := s.git.bytes(ctx, dir, append(args, treeish)...)
	if err != nil {
		return nil, err
	}
	var entries []gitEntry
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta)) // mode type oid size
		if len(f) != 4 || f[1] != "blob" || f[0] == "120000" {
			continue // submodules and symlinks
		}
		size, _ := strconv.ParseInt(f[3], 10, 64)
		entries = append(entries, gitEntry{f[0], f[2], string(p), size})
	}
	return entries, nil
}

// readBlobs hands over the entries' blobs as file artifacts of target
// (fsys, when set, is the artifacts' FS), read with one
// `git cat-file --batch`.
func (s *gitSource) readBlobs(ctx context.Context, sink scanners.Sink, current *gitLines, entries []gitEntry, target string, kind scanners.TargetKind, fsys fs.FS) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := s.git.command(ctx, "", "cat-file", "--batch")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, e := range entries {
			if e.size <= s.o.MaxFileSize {
				fmt.Fprintln(w, e.oid)
			}
		}
		w.Flush()
		stdin.Close()
	}()
	r := bufio.NewReaderSize(stdout, 64<<10)
	var walkErr error
	for _, e := range entries {
		if e.size > s.o.MaxFileSize {
			sink.Error(scanners.Error{Target: target, Path: e.path, Message: fmt.Sprintf("not scanned: %d bytes is over --max-file-size (%d bytes)", e.size, s.o.MaxFileSize)})
			continue
		}
		if walkErr = ctx.Err(); walkErr != nil {
			break
		}
		hdr, err := r.ReadString('\n')
		if err != nil {
			walkErr = fmt.Errorf("git cat-file: %w", err)
			break
		}
		f := strings.Fields(hdr)
		if len(f) != 3 {
			walkErr = fmt.Errorf("git cat-file: unexpected header %q", hdr)
			break
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || n < 0 {
			walkErr = fmt.Errorf("git cat-file: unexpected header %q", hdr)
			break
		}
		mode := os.FileMode(0o644)
		if e.mode == "100755" {
			mode = 0o755
		}
		if n > s.o.MaxFileSize {
			// Known only now (an index entry): skipped, and said.
			sink.Error(scanners.Error{Target: target, Path: e.path, Message: fmt.Sprintf("not scanned: %d bytes is over --max-file-size (%d bytes)", n, s.o.MaxFileSize)})
			if _, walkErr = io.CopyN(io.Discard, r, n+1); walkErr != nil {
				break
			}
			continue
		}
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: target, TargetKind: kind, Path: e.path, Size: n, Mode: mode, FS: fsys}
		if walkErr = s.blob(ctx, sink, a, r, current); walkErr != nil {
			break
		}
	}
	cancel()
	io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil && walkErr == nil && ctx.Err() == nil {
		walkErr = fmt.Errorf("git cat-file: %w", err)
	}
	return walkErr
}

// blob hands over one blob of cat-file's output (a.Size bytes and a
// newline), leaving r at the next header.
func (s *gitSource) blob(ctx context.Context, sink scanners.Sink, a *scanners.Artifact, r *bufio.Reader, current *gitLines) error {
	n := a.Size
	if n <= gitSmall {
		data := make([]byte, n+1) // content and a trailing newline
		if _, err := io.ReadFull(r, data); err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		s.hand(sink, a, data[:n], current)
		return nil
	}
	head, _ := r.Peek(8000)
	body := io.LimitReader(r, n)
	var lines *gitLineWriter
	if current != nil && !scanners.IsBinary(head) {
		lines = current.adder(a.Path)
		body = io.TeeReader(body, lines)
	}
	if err := sink.Artifact(a, body); err != nil && ctx.Err() == nil {
		sink.Error(scanners.Error{Target: s.name, Path: a.Path, Message: err.Error()})
	}
	// Whatever the checks did not read: through the line recorder too.
	if _, err := io.Copy(io.Discard, body); err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	if lines != nil {
		lines.Close()
	}
	if b, err := r.ReadByte(); err != nil || b != '\n' {
		return fmt.Errorf("git cat-file: blob of %s not followed by a newline", a.Path)
	}
	return nil
}

// walkHistory hands over, for every commit reachable from any ref and every
// file it changed, the lines it added, as a patch artifact. Lines still in
// the working tree are left to the working-tree scan; the others are marked
// as no longer present, since a secret removed by a later commit stays in
// every clone of the history.
//
// revs are what git log walks ("--all", or a range); where says where
// current's lines are; a nil current (--since-commit) hands over every
// added line.
func (s *gitSource) walkHistory(ctx context.Context, sink scanners.Sink, current *gitLines, where string, revs []string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := []string{"-c", "diff.noprefix=false",
		"log", "-p", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--full-history", "--full-index",
		"--diff-filter=tuxdb", "--format=medium", "--no-abbrev-commit", "--src-prefix=a/", "--dst-prefix=b/"}
	// A merge commit's own changes — a conflict resolution, a line slipped in
	// while merging — are in no parent's commit; git log shows merges
	// without a diff. The remerge diff (git 2.36) is exactly those lines:
	// the merge against git's automatic merge of its parents.
	if ok, v := remergeDiff(ctx, s.git); ok {
		args = append(args, "--diff-merges=remerge")
	} else {
		s.note(fmt.Sprintf("git %s is older than 2.36: changes made in merge commits themselves (conflict resolutions) were not scanned", v))
	}
	args = append(append(args, revs...), "--")
	cmd := s.git.command(ctx, "", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	filtered := dropRemergeHeaders(stdout)
	defer filtered.Close() // ends the filter if the parser stops early
	files, err := gitdiff.Parse(filtered)
	if err != nil {
		cancel()
		cmd.Wait()
		return fmt.Errorf("git log: parse: %w", err)
	}
	big := &gitBigBlobs{g: s.git}
	defer big.close()
	commits := newGitCommits(ctx, s.git) // for progress only
	for f := range files {
		if ctx.Err() != nil {
			continue // drain so the parser's goroutine ends
		}
		commits.file(f)
		if f.IsDelete || f.PatchHeader == nil {
			continue
		}
		if f.IsBinary {
			big.check(ctx, f)
			continue
		}
		s.patchArtifacts(sink, f, current, where)
	}
	werr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("git log: %v: %s", werr, oneLine(stderr.String(), 500))
	}
	if n := len(big.found); n > 0 {
		shown := big.found[:min(n, 5)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf(" and %d more", n-len(shown))
		}
		s.note(fmt.Sprintf("%d file version(s) in history over %d MiB were treated as binary: their added lines were not scanned (the working tree's or HEAD's copy is): %s%s",
			n, gitBigFile>>20, strings.Join(shown, ", "), more))
	}
	return nil
}

// gitBigBlobs finds the binary patches of history whose blob is larger than
// gitBigFile (git then treats any file as binary), asking one
// `git cat-file --batch-check` for their sizes.
type gitBigBlobs struct {
	g     *gitRunner
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	broke bool
	found []string // path@commit
}

func (b *gitBigBlobs) check(ctx context.Context, f *gitdiff.File) {
	oid := f.NewOIDPrefix
	if b.broke || len(oid) < 40 || strings.Trim(oid, "0") == "" {
		return
	}
	if b.cmd == nil {
		b.cmd = b.g.command(ctx, "", "cat-file", "--batch-check")
		var err error
		if b.in, err = b.cmd.StdinPipe(); err != nil {
			b.broke = true
			return
		}
		out, err := b.cmd.StdoutPipe()
		if err != nil {
			b.broke = true
			return
		}
		b.out = bufio.NewReader(out)
		if err := b.cmd.Start(); err != nil {
			b.broke = true
			return
		}
	}
	if _, err := fmt.Fprintln(b.in, oid); err != nil {
		b.broke = true
		return
	}
	line, err := b.out.ReadString('\n')
	if err != nil {
		b.broke = true
		return
	}
	fs := strings.Fields(line) // oid type size, or oid missing
	if len(fs) != 3 {
		return
	}
	if size, err := strconv.ParseInt(fs[2], 10, 64); err == nil && size > gitBigFile {
		sha := f.PatchHeader.SHA
		b.found = append(b.found, f.NewName+"@"+sha[:min(len(sha), 12)])
	}
}

func (b *gitBigBlobs) close() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	b.in.Close()
	io.Copy(io.Discard, b.out)
	b.cmd.Wait()
}

// remergeDiff reports whether the git on PATH has --remerge-diff (2.36 and
// later), and its version.
func remergeDiff(ctx context.Context, g *gitRunner) (bool, string) {
	out, err := g.command(ctx, g.home, "version").Output()
	if err != nil {
		return false, "(unknown version)"
	}
	f := strings.Fields(string(out)) // git version 2.39.5[.windows.1]
	if len(f) < 3 {
		return false, strings.TrimSpace(string(out))
	}
	v := f[2]
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		return false, v
	}
	return major > 2 || major == 2 && minor >= 36, v
}

// dropRemergeHeaders removes the "remerge CONFLICT (content): …" lines that
// a remerge diff puts among a file's extended headers, which gitdiff does
// not know (it then misreads the file's name). At the start of a line in
// git log's output they can be nothing else: diff lines start with '+',
// '-', ' ' or '\\', and the medium format indents commit messages.
func dropRemergeHeaders(r io.Reader) *io.PipeReader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		bw := bufio.NewWriterSize(pw, 64<<10)
		var err error
		for err == nil {
			var line []byte
			line, err = br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				// A long line: copy it through in pieces.
				if _, werr := bw.Write(line); werr != nil {
					break
				}
				for errors.Is(err, bufio.ErrBufferFull) {
					line, err = br.ReadSlice('\n')
					if _, werr := bw.Write(line); werr != nil {
						err = werr
					}
				}
				continue
			}
			if bytes.HasPrefix(line, []byte("remerge ")) {
				continue
			}
			if _, werr := bw.Write(line); werr != nil {
				err = werr
			}
		}
		if errors.Is(err, io.EOF) {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// patchArtifacts turns one file's diff in one commit into at most two patch
// artifacts: the added lines that are gone from the working tree (marked)
// and nothing for those still there (the working-tree scan reports them).
func (s *gitSource) patchArtifacts(sink scanners.Sink, f *gitdiff.File, current *gitLines, where string) {
	var gone bytes.Buffer
	partial := current != nil && current.partial(f.NewName)
	var lines []int
	for _, frag := range f.TextFragments {
		n := int(frag.NewPosition)
		for _, l := range frag.Lines {
			switch l.Op {
			case gitdiff.OpAdd:
				text := strings.TrimSuffix(l.Line, "\n")
				if current == nil || !current.has(f.NewName, []byte(text)) {
					gone.WriteString(text)
					gone.WriteByte('\n')
					lines = append(lines, n)
				}
				n++
			case gitdiff.OpContext:
				n++
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	sha := f.PatchHeader.SHA
	short := sha
	if len(short) > 12 {
		short = short[:12]
	}
	a := &scanners.Artifact{
		Kind:       scanners.ArtifactPatch,
		Target:     s.name,
		TargetKind: scanners.KindRepo,
		Path:       f.NewName,
		Size:       int64(gone.Len()),
		Commit:     sha,
		Lines:      lines,
		Note:       fmt.Sprintf("added in commit %s; no longer present %s, removed later or only on another branch, but still in the history that every clone keeps: rotate it", short, where),
	}
	switch {
	case current == nil:
		a.Note = fmt.Sprintf("added in commit %s, after --since-commit %s", short, s.o.Since)
	case partial:
		a.Note = fmt.Sprintf("added in commit %s; the file %s is too large to tell whether the line is still there, and it stays in the history that every clone keeps: rotate it", short, where)
	}
	if err := sink.Artifact(a, bytes.NewReader(gone.Bytes())); err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: f.NewName, Message: err.Error()})
	}
}
