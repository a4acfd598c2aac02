// Package archive opens the archives and compressed files found among a
// target's artifacts — zip (wheels, jars), tar, gzip, bzip2, xz, zstd, lz4,
// 7z — and hands their members to the dispatcher's sink as artifacts of
// their own, so that every check that reads text sees inside them. Member
// paths are the container's path, "!", and the member's name, as gitleaks
// names them (dist/app.whl!pkg/config.py; nested: a.zip!b.tar.gz!c.env); a
// compressed tar is one container (x.tgz!member), and a single compressed
// file's content is named for the file without its extension
// (app.log.gz!app.log).
//
// Model containers (PyTorch zips, .npz, .keras, .nemo, pickles and other
// weight files) are the models check's and are not opened here; nor are
// members that are pickles or weights: the models check opens every
// archive itself to find them and hands their strings to the secrets check.
//
// What is scanned is hostile. Depth, total expansion, the expansion ratio,
// the member count and decoder dictionaries are bounded whatever the
// headers claim; member names are data, never paths to open or write. What
// is not scanned — a limit, an encrypted member, an unsupported format — is
// a finding, never silence, and a limit also makes the run exit 2.
package archive

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Defaults of Options. The depth is gitleaks' --max-archive-depth (whose
// own default, 0, turns archives off).
const (
	DefaultMaxDepth   = 3
	DefaultMaxSize    = 4 << 30 // bytes expanded from one archive, all members
	DefaultMaxRatio   = 200     // expanded bytes per archive byte, past MinRatioBytes
	MinRatioBytes     = 64 << 20
	DefaultMaxMembers = 100000
	DefaultMaxDict    = 128 << 20 // xz/zstd window, as the models check's
	DefaultMaxInMem   = 32 << 20  // nested zip/7z read into memory, else spooled
)

// Options configures an Expander. Zero fields take the defaults.
type Options struct {
	// MaxDepth is how deeply archives nest (1: the members of an archive,
	// not those of an archive inside it).
	MaxDepth int
	// MaxSize bounds the bytes decompressed from one archive, nested
	// archives included; MaxRatio bounds them against the archive's size
	// once past MinRatioBytes (a decompression bomb).
	MaxSize  int64
	MaxRatio int64
	// MaxMembers bounds the members looked at in one archive.
	MaxMembers int
	// MaxDict bounds the dictionary (window) an xz or zstd decoder may
	// allocate; a stream that needs more is not decompressed.
	MaxDict int64
	// TempDir is where nested zip and 7z archives larger than
	// DefaultMaxInMem are spooled (default os.TempDir).
	TempDir string
	// NotScanned is the rule of the finding for what could not be scanned.
	NotScanned scanners.Rule
	// Escapes, when set, is the rule of the finding for a member whose
	// name leads out of the directory it would be extracted to.
	Escapes *scanners.Rule
}

// Expander opens archives for the dispatcher (scanners.WithExpander). It is
// safe for concurrent use.
type Expander struct{ o Options }

// New returns an Expander.
func New(o Options) *Expander {
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxRatio <= 0 {
		o.MaxRatio = DefaultMaxRatio
	}
	if o.MaxMembers <= 0 {
		o.MaxMembers = DefaultMaxMembers
	}
	if o.MaxDict <= 0 {
		o.MaxDict = DefaultMaxDict
	}
	return &Expander{o: o}
}

// Rules lists the rules an Expander reports.
func (x *Expander) Rules() []scanners.Rule {
	out := []scanners.Rule{x.o.NotScanned}
	if x.o.Escapes != nil {
		out = append(out, *x.o.Escapes)
	}
	return out
}

// Expands reports whether an artifact is an archive to open: a file (not a
// member: nested archives are opened by Expand) whose content is an archive
// or compressed data and which is not a model container.
func (x *Expander) Expands(a *scanners.Artifact, head []byte) bool {
	if a.Kind != scanners.ArtifactFile && a.Kind != "" || a.Container != "" {
		return false
	}
	k := sniff(head)
	return k != kindNone && !modelContainer(a.Path, head, k)
}

// Expand hands the members of archive a, whose content is c, to sink. It
// returns the findings about what it could not scan, and an error wrapping
// scanners.ErrIncomplete when a limit stopped it.
func (x *Expander) Expand(ctx context.Context, a *scanners.Artifact, c scanners.Content, sink scanners.Sink) ([]scanners.Finding, error) {
	w := &walk{x: x, ctx: ctx, sink: sink, a: a, budget: x.o.MaxSize, packed: c.Size()}
	w.container(a.Path, c, c.Size(), 1)
	if len(w.limits) > 0 {
		return w.out, fmt.Errorf("%w: archive %s: %s", scanners.ErrIncomplete, a.Path, strings.Join(w.limits, "; "))
	}
	return w.out, nil
}

// walk is the state of one Expand call.
type walk struct {
	x       *Expander
	ctx     context.Context
	sink    scanners.Sink
	a       *scanners.Artifact
	budget  int64 // bytes left to decompress
	packed  int64 // the archive's own size, for the ratio
	members int
	out     []scanners.Finding
	limits  []string
	stopped bool // a limit that ends the walk (size, ratio, members)
}

// notScanned reports what could not be scanned at p.
func (w *walk) notScanned(p, what, evidence string) {
	b := *w.a
	b.Path = p
	f := scanners.At(&b, w.x.o.NotScanned, 0, "Not scanned for secrets and other text problems: "+what+" "+w.x.o.NotScanned.Fix)
	f.Evidence = evidence
	f.Check = w.x.o.NotScanned.Check
	w.out = append(w.out, f)
}

// limit reports a limit reached at p; the run exits 2.
func (w *walk) limit(p, what, evidence string) {
	w.notScanned(p, what, evidence)
	w.limits = append(w.limits, evidence+" at "+p)
}

// expanded counts n more decompressed bytes and reports whether the walk
// may go on.
func (w *walk) expanded(p string, n int64) bool {
	if w.stopped {
		return false
	}
	w.budget -= n
	used := w.x.o.MaxSize - w.budget
	switch {
	case w.budget < 0:
		w.stopped = true
		w.limit(p, fmt.Sprintf("more than %d MiB were decompressed from this archive (a decompression bomb or a very large archive); the rest of it was not read.", w.x.o.MaxSize>>20), "size limit")
	case used > MinRatioBytes && used > w.packed*w.x.o.MaxRatio:
		w.stopped = true
		w.limit(p, fmt.Sprintf("this archive expands more than %d times its size (%d MiB from %d bytes so far: a decompression bomb); the rest of it was not read.", w.x.o.MaxRatio, used>>20, w.packed), "ratio limit")
	}
	return !w.stopped
}

// member counts one more member and reports whether the walk may go on.
func (w *walk) member(p string) bool {
	if w.stopped {
		return false
	}
	w.members++
	if w.members > w.x.o.MaxMembers {
		w.stopped = true
		w.limit(p, fmt.Sprintf("the archive has more than %d members; the rest were not read.", w.x.o.MaxMembers), "member limit")
		return false
	}
	return true
}

// container opens the archive or compressed stream at p, readable at any
// offset.
func (w *walk) container(p string, ra io.ReaderAt, size int64, depth int) {
	head := make([]byte, min(size, 8<<10))
	n, err := ra.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		w.notScanned(p, fmt.Sprintf("the archive could not be read (%v).", err), "read error")
		return
	}
	head = head[:n]
	switch k := sniff(head); k {
	case kindZip:
		w.zip(p, ra, size, depth)
	case kind7z:
		w.sevenZip(p, ra, size, depth)
	case kindXz:
		if err := checkXz(ra, size, w.x.o.MaxDict); err != nil {
			w.dictError(p, "xz", err)
			return
		}
		w.decompress(p, bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), 64<<10), kindXz, depth)
	case kindRar:
		w.notScanned(p, "RAR archives are not supported; unpack it and scan its content.", "RAR archive")
	default:
		w.stream(p, bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), 64<<10), depth)
	}
}

// stream opens an archive or compressed stream that is read in order: a
// tar, or a compressed file (which holds a tar, one file, or another
// archive).
func (w *walk) stream(p string, br *bufio.Reader, depth int) {
	head, _ := br.Peek(8 << 10)
	k := sniff(head)
	switch k {
	case kindTar:
		w.tar(p, br, depth)
		return
	case kindZip, kind7z, kindXz, kindRar:
		// Needs random access: a nested archive read whole first.
		ra, n, cleanup, ok := w.materialize(p, br)
		if !ok {
			return
		}
		defer cleanup()
		w.container(p, ra, n, depth)
		return
	case kindNone:
		return
	}
	w.decompress(p, br, k, depth)
}

// decompress reads a compressed stream of kind k: a tar inside is the
// stream's container (x.tar.gz!member), anything else one member.
func (w *walk) decompress(p string, br *bufio.Reader, k kind, depth int) {
	dr, err := w.decompressor(k, br)
	if err != nil {
		w.dictError(p, k.String(), err)
		return
	}
	if c, ok := dr.(io.Closer); ok {
		defer c.Close()
	}
	r := &budgetReader{r: dr, w: w, p: p}
	inner := bufio.NewReaderSize(r, 64<<10)
	ih, _ := inner.Peek(8 << 10)
	switch ik := sniff(ih); {
	case ik == kindTar:
		// x.tar.gz is one container: its members are x.tar.gz!member.
		w.tar(p, inner, depth)
	default:
		name := strings.TrimSuffix(path.Base(p), path.Ext(p))
		if strings.HasSuffix(strings.ToLower(p), ".tgz") {
			name += ".tar"
		}
		if name == "" || name == path.Base(p) {
			name = "(" + k.String() + ")"
		}
		w.file(p, name, inner, -1, 0, depth)
	}
	if r.err != nil && !errors.Is(r.err, io.EOF) && !errors.Is(r.err, errStopped) {
		w.notScanned(p, fmt.Sprintf("the %s stream is corrupt (%v); what follows the error was not read.", k, r.err), k.String()+" corrupt")
	}
}

// file handles one member at p!name: a nested archive is opened (within the
// depth), a model file is left to the models check, and anything else is
// handed to the sink.
func (w *walk) file(p, name string, r io.Reader, size int64, mode os.FileMode, depth int) {
	child := p + "!" + cleanName(name)
	if !w.member(child) {
		return
	}
	w.checkName(p, name)
	bufSize := 64 << 10
	if size >= 0 && size < int64(bufSize) {
		bufSize = max(int(size), 16)
	}
	br := bufio.NewReaderSize(r, bufSize)
	head, _ := br.Peek(8 << 10)
	if k := sniff(head); k != kindNone && !modelContainer(name, head, k) {
		if depth+1 > w.x.o.MaxDepth {
			w.limit(child, fmt.Sprintf("archives nested deeper than %d (--max-archive-depth) are not opened.", w.x.o.MaxDepth), "depth limit")
			return
		}
		w.stream(child, br, depth+1)
		return
	}
	if modelFile(name, head) {
		return // the models check's: it opens the archive itself
	}
	a := &scanners.Artifact{
		Kind: scanners.ArtifactFile, Target: w.a.Target, TargetKind: w.a.TargetKind,
		Path: child, Size: size, Mode: mode,
		Layer: w.a.Layer, LayerIndex: w.a.LayerIndex, CreatedBy: w.a.CreatedBy,
		Commit: w.a.Commit, Digest: w.a.Digest, Note: w.a.Note, Container: p,
	}
	var cr io.Reader = br
	if size >= 0 {
		cr = &sizedReader{r: br, left: size}
	}
	if err := w.sink.Artifact(a, cr); err != nil {
		w.stopped = true // the run was cancelled
	}
}

// checkName reports a member whose name climbs out of the directory the
// archive is extracted to. The name is only ever shown.
func (w *walk) checkName(p, name string) {
	if w.x.o.Escapes == nil {
		return
	}
	n := strings.ReplaceAll(name, "\\", "/")
	why := ""
	switch {
	case strings.HasPrefix(n, "/") || len(n) > 1 && n[1] == ':':
		why = "is an absolute path"
	case n == ".." || strings.HasPrefix(n, "../") || strings.Contains(n, "/../") || strings.HasSuffix(n, "/.."):
		why = "climbs out with .."
	default:
		return
	}
	b := *w.a
	b.Path = p
	f := scanners.At(&b, *w.x.o.Escapes, 0, fmt.Sprintf("Archive member %q %s: extracting the archive writes outside the directory it is extracted to (zip slip). mlwarden reads it as data and never writes it. %s", name, why, w.x.o.Escapes.Fix))
	f.Evidence = "member name " + name
	w.out = append(w.out, f)
}

// cleanName is a member's name as shown in paths: slashes, no leading
// "./" or "/".
func cleanName(name string) string {
	n := path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))
	return strings.TrimPrefix(n, "/")
}

var errStopped = errors.New("archive limit reached")

// errLarger is the read error of a member whose content runs past the size
// its header states: what was read is scanned, the rest is an error.
var errLarger = errors.New("the member is larger than its header says")

// sizedReader reads a member of a stated size, and fails (rather than
// stopping silently) when more follows.
type sizedReader struct {
	r    io.Reader
	left int64
}

func (s *sizedReader) Read(p []byte) (int, error) {
	if s.left <= 0 {
		var one [1]byte
		if n, _ := s.r.Read(one[:]); n > 0 {
			return 0, errLarger
		}
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	if err == io.EOF && s.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// budgetReader counts decompressed bytes against the walk's limits.
type budgetReader struct {
	r   io.Reader
	w   *walk
	p   string
	err error
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.w.stopped || b.w.ctx.Err() != nil {
		return 0, errStopped
	}
	n, err := b.r.Read(p)
	if !b.w.expanded(b.p, int64(n)) {
		b.err = errStopped
		return n, errStopped
	}
	if err != nil && b.err == nil {
		b.err = err
	}
	return n, err
}

// materialize reads a nested archive whole: in memory up to
// DefaultMaxInMem, else into an anonymous temporary file (named by us,
// unlinked at once).
func (w *walk) materialize(p string, r io.Reader) (io.ReaderAt, int64, func(), bool) {
	nop := func() {}
	r = &budgetReader{r: r, w: w, p: p}
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, r, DefaultMaxInMem+1)
	if err != nil && !errors.Is(err, io.EOF) {
		if !errors.Is(err, errStopped) {
			w.notScanned(p, fmt.Sprintf("the nested archive could not be read (%v).", err), "read error")
		}
		return nil, 0, nop, false
	}
	if n <= DefaultMaxInMem {
		return bytes.NewReader(buf.Bytes()), n, nop, true
	}
	f, err := os.CreateTemp(w.x.o.TempDir, "mlwarden-archive-*")
	if err != nil {
		w.notScanned(p, fmt.Sprintf("the nested archive could not be spooled (%v).", err), "spool error")
		return nil, 0, nop, false
	}
	os.Remove(f.Name())
	total, err := io.Copy(f, io.MultiReader(&buf, r))
	if err != nil {
		f.Close()
		if !errors.Is(err, errStopped) {
			w.notScanned(p, fmt.Sprintf("the nested archive could not be spooled (%v).", err), "spool error")
		}
		return nil, 0, nop, false
	}
	return f, total, func() { f.Close() }, true
}

// dictError reports a stream that cannot be opened: over the dictionary
// limit (a limit: exit 2), or corrupt.
func (w *walk) dictError(p, format string, err error) {
	if errors.Is(err, errDict) {
		w.limit(p, fmt.Sprintf("the %s stream was not decompressed: %v (a decoder would allocate that much memory before reading any data).", format, err), "dictionary limit")
		return
	}
	w.notScanned(p, fmt.Sprintf("the %s stream cannot be opened (%v).", format, err), format+" corrupt")
}
