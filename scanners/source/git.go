package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
}

// gitSource is a repository: its working tree (the files on disk for a local
// checkout, the HEAD tree for a bare repository or a clone) and the lines
// every commit on every ref added.
type gitSource struct {
	name   string // "git:" + the reference, without any password
	ref    string // the path or URL as given
	remote bool
	o      GitOptions

	mu    sync.Mutex
	notes []string
	// root is a local checkout's working tree, handed to checks as
	// Artifact.FS for the working tree's files (nil for clones).
	root   *os.Root
	rootFS fs.FS
}

// FS is a local checkout's working tree once walked (nil for clones).
func (s *gitSource) FS() fs.FS { return s.rootFS }

// Close releases the working tree's root, once the run is over.
func (s *gitSource) Close() error {
	if s.root == nil {
		return nil
	}
	return s.root.Close()
}

// gitSCPLike matches scp-style remotes such as git@host:org/repo.git.
var gitSCPLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:`)

// OpenGit opens a git repository as a source: a local path (read in place) or
// a remote URL (cloned with the git binary into a temporary directory when
// walked; git talks only to the host in the URL). Every file of the working
// tree is a file artifact; every commit's added lines in one file are a
// patch artifact, marked when the lines are no longer in the working tree.
func OpenGit(ctx context.Context, ref string, o GitOptions) (scanners.Source, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("git target %s: the git binary is needed: %w", gitRedact(ref), err)
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	s := &gitSource{name: "git:" + gitRedact(ref), ref: ref, o: o}
	if strings.Contains(ref, "://") || gitSCPLike.MatchString(ref) {
		s.remote = true
		return s, nil
	}
	abs, err := filepath.Abs(ref)
	if err != nil {
		return nil, fmt.Errorf("git target %s: %w", ref, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("git target: %w", err)
	}
	if _, err := gitOutput(ctx, abs, "rev-parse", "--git-dir"); err != nil {
		return nil, fmt.Errorf("git target %s: not a git repository: %w", ref, err)
	}
	s.ref = abs
	// A subdirectory of a checkout means the whole repository: history paths
	// are relative to its top.
	if top, err := gitOutput(ctx, abs, "rev-parse", "--show-toplevel"); err == nil && top != "" {
		s.ref = top
	}
	return s, nil
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
	return scanners.Target{Name: s.name, Kind: scanners.KindRepo, Notes: append([]string(nil), s.notes...)}
}

func (s *gitSource) note(n string) {
	s.mu.Lock()
	s.notes = append(s.notes, n)
	s.mu.Unlock()
}

func (s *gitSource) Walk(ctx context.Context, sink scanners.Sink) error {
	dir := s.ref
	if s.remote {
		tmp, err := os.MkdirTemp("", "mlwarden-git-*")
		if err != nil {
			return fmt.Errorf("clone: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "repo.git")
		if err := s.clone(ctx, dir); err != nil {
			return err
		}
	}
	bare, err := gitOutput(ctx, dir, "rev-parse", "--is-bare-repository")
	if err != nil {
		return err
	}
	head, err := gitOutput(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		head = "" // an empty repository
	}
	if head != "" {
		s.note("HEAD is " + head)
	}
	if shallow, _ := gitOutput(ctx, dir, "rev-parse", "--is-shallow-repository"); shallow == "true" {
		s.note("shallow clone: commits before the shallow boundary were not scanned; fetch with --unshallow to scan the whole history")
	}

	current := &gitLineSets{sets: map[string]map[uint64]struct{}{}}
	if bare == "true" {
		if head != "" {
			err = s.walkTree(ctx, sink, dir, current)
		}
	} else {
		err = s.walkCheckout(ctx, sink, dir, current)
	}
	if err != nil || s.o.NoHistory {
		return err
	}
	return s.walkHistory(ctx, sink, dir, current, bare == "true")
}

// clone makes a bare clone of the remote. Redirects are refused so that git
// talks only to the host the user named, prompts are off, and no hooks or
// submodules run.
func (s *gitSource) clone(ctx context.Context, dir string) error {
	args := []string{"-c", "http.followRedirects=false", "-c", "protocol.ext.allow=never", "-c", "core.hooksPath=/dev/null",
		"clone", "--bare", "--quiet", "--no-tags"}
	if s.o.Depth > 0 {
		args = append(args, "--depth", strconv.Itoa(s.o.Depth), "--no-single-branch")
	}
	args = append(args, "--", s.ref, dir)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "SSH_ASKPASS=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
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

// gitLineSets records the lines of each file in the working tree, hashed, to
// tell whether a line some commit added is still there.
type gitLineSets struct {
	mu   sync.Mutex
	sets map[string]map[uint64]struct{}
}

func (l *gitLineSets) add(path string, data []byte) {
	set := map[uint64]struct{}{}
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		set[gitLineHash(line)] = struct{}{}
	}
	l.mu.Lock()
	l.sets[path] = set
	l.mu.Unlock()
}

func (l *gitLineSets) has(path string, line []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.sets[path][gitLineHash(line)]
	return ok
}

func gitLineHash(line []byte) uint64 {
	h := fnv.New64a()
	h.Write(bytes.TrimRight(line, "\r"))
	return h.Sum64()
}

// walkCheckout hands over the files of a local checkout that git tracks or
// would track (untracked but not ignored), read from disk as they are now.
func (s *gitSource) walkCheckout(ctx context.Context, sink scanners.Sink, dir string, current *gitLineSets) error {
	out, err := gitBytes(ctx, dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
	if err != nil {
		return err
	}
	if s.root == nil {
		if s.root, err = os.OpenRoot(dir); err != nil {
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
		s.checkoutFile(sink, dir, string(rel), current)
	}
	return nil
}

func (s *gitSource) checkoutFile(sink scanners.Sink, dir, rel string, current *gitLineSets) {
	abs := filepath.Join(dir, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return // deleted since, a symlink or a submodule
	}
	if fi.Size() > s.o.MaxFileSize {
		sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("not scanned: %d bytes is over --max-file-size (%d bytes)", fi.Size(), s.o.MaxFileSize)})
		return
	}
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("open: %s", errMsg(err))})
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.o.MaxFileSize))
	if err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("read: %s", errMsg(err))})
		return
	}
	s.fileArtifact(sink, rel, fi.Mode(), data, current, s.rootFS)
}

// fileArtifact hands over one file of the working tree (or of HEAD's tree,
// with fsys nil).
func (s *gitSource) fileArtifact(sink scanners.Sink, rel string, mode os.FileMode, data []byte, current *gitLineSets, fsys fs.FS) {
	if !scanners.IsBinary(data) {
		current.add(rel, data)
	}
	a := &scanners.Artifact{
		Kind:       scanners.ArtifactFile,
		Target:     s.name,
		TargetKind: scanners.KindRepo,
		Path:       rel,
		Size:       int64(len(data)),
		Mode:       mode,
		FS:         fsys,
	}
	if err := sink.Artifact(a, bytes.NewReader(data)); err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: rel, Message: err.Error()})
	}
}

// walkTree hands over the files of HEAD's tree (bare repositories and
// clones), read with one `git cat-file --batch`.
func (s *gitSource) walkTree(ctx context.Context, sink scanners.Sink, dir string, current *gitLineSets) error {
	out, err := gitBytes(ctx, dir, "ls-tree", "-r", "-z", "--full-tree", "-l", "HEAD")
	if err != nil {
		return err
	}
	type entry struct {
		mode, oid, path string
		size            int64
	}
	var entries []entry
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
		entries = append(entries, entry{f[0], f[2], string(p), size})
	}
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "cat-file", "--batch")
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
	r := bufio.NewReader(stdout)
	var walkErr error
	for _, e := range entries {
		if e.size > s.o.MaxFileSize {
			sink.Error(scanners.Error{Target: s.name, Path: e.path, Message: fmt.Sprintf("not scanned: %d bytes is over --max-file-size (%d bytes)", e.size, s.o.MaxFileSize)})
			continue
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
		n, _ := strconv.ParseInt(f[2], 10, 64)
		data := make([]byte, n+1) // content and a trailing newline
		if _, err := io.ReadFull(r, data); err != nil {
			walkErr = fmt.Errorf("git cat-file: %w", err)
			break
		}
		mode := os.FileMode(0o644)
		if e.mode == "100755" {
			mode = 0o755
		}
		s.fileArtifact(sink, e.path, mode, data[:n], current, nil)
	}
	io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil && walkErr == nil {
		walkErr = fmt.Errorf("git cat-file: %w", err)
	}
	return walkErr
}

// walkHistory hands over, for every commit reachable from any ref and every
// file it changed, the lines it added, as a patch artifact. Lines still in
// the working tree are left to the working-tree scan; the others are marked
// as no longer present, since a secret removed by a later commit stays in
// every clone of the history.
func (s *gitSource) walkHistory(ctx context.Context, sink scanners.Sink, dir string, current *gitLineSets, bare bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := []string{"-C", dir, "-c", "log.showSignature=false", "-c", "diff.noprefix=false",
		"log", "--all", "-p", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--full-history",
		"--diff-filter=tuxdb", "--format=medium", "--no-abbrev-commit", "--src-prefix=a/", "--dst-prefix=b/"}
	// A merge commit's own changes — a conflict resolution, a line slipped in
	// while merging — are in no parent's commit; git log shows merges
	// without a diff. The remerge diff (git 2.36) is exactly those lines:
	// the merge against git's automatic merge of its parents.
	if ok, v := remergeDiff(ctx); ok {
		args = append(args, "--diff-merges=remerge")
	} else {
		s.note(fmt.Sprintf("git %s is older than 2.36: changes made in merge commits themselves (conflict resolutions) were not scanned", v))
	}
	cmd := exec.CommandContext(ctx, "git", args...)
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
	where := "in the working tree"
	if bare {
		where = "at HEAD"
	}
	for f := range files {
		if ctx.Err() != nil {
			continue // drain so the parser's goroutine ends
		}
		if f.IsBinary || f.IsDelete || f.PatchHeader == nil {
			continue
		}
		s.patchArtifacts(sink, f, current, where)
	}
	werr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("git log: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// remergeDiff reports whether the git on PATH has --remerge-diff (2.36 and
// later), and its version.
func remergeDiff(ctx context.Context) (bool, string) {
	out, err := exec.CommandContext(ctx, "git", "version").Output()
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
func (s *gitSource) patchArtifacts(sink scanners.Sink, f *gitdiff.File, current *gitLineSets, where string) {
	var gone bytes.Buffer
	var lines []int
	for _, frag := range f.TextFragments {
		n := int(frag.NewPosition)
		for _, l := range frag.Lines {
			switch l.Op {
			case gitdiff.OpAdd:
				text := strings.TrimSuffix(l.Line, "\n")
				if !current.has(f.NewName, []byte(text)) {
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
	if err := sink.Artifact(a, bytes.NewReader(gone.Bytes())); err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: f.NewName, Message: err.Error()})
	}
}

// gitOutput runs git in dir and returns its trimmed standard output.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := gitBytes(ctx, dir, args...)
	return strings.TrimSpace(string(b)), err
}

func gitBytes(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && stderr.Len() > 0 {
			return out, fmt.Errorf("git %s: %s", args[0], strings.TrimSpace(stderr.String()))
		}
		return out, fmt.Errorf("git %s: %w", args[0], err)
	}
	return out, nil
}
