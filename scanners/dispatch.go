package scanners

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Dispatcher walks sources once and feeds each artifact to every scanner that
// wants it.
type Dispatcher struct {
	scanners []Scanner
	workers  int
	memLimit int64
	tempDir  string
	inline   func(a *Artifact, data []byte, fs []Finding)
	perRule  int
	progress Progress
	skip     Skip
	hashAll  bool
	expander Expander
}

// Option configures a Dispatcher.
type Option func(*Dispatcher)

// WithWorkers bounds how many scanner calls run at once (default: 4).
func WithWorkers(n int) Option {
	return func(d *Dispatcher) {
		if n > 0 {
			d.workers = n
		}
	}
}

// WithMemoryLimit sets the size above which streamed content is spooled to an
// anonymous temporary file instead of memory (default 32 MiB).
func WithMemoryLimit(n int64) Option {
	return func(d *Dispatcher) { d.memLimit = n }
}

// WithFindingsPerRule sets how many findings of one rule one artifact keeps
// (default MaxFindingsPerRule; 0 or less: all).
func WithFindingsPerRule(n int) Option {
	return func(d *Dispatcher) { d.perRule = n }
}

// WithTempDir sets where large streamed content is spooled (default os.TempDir).
func WithTempDir(dir string) Option {
	return func(d *Dispatcher) { d.tempDir = dir }
}

// WithInlineSuppression sets fn to see each artifact's findings while its
// whole content is in memory (files up to SmallFile and small streams), to
// mark those that a comment on their line suppresses (suppress.Inline).
func WithInlineSuppression(fn func(a *Artifact, data []byte, fs []Finding)) Option {
	return func(d *Dispatcher) { d.inline = fn }
}

// WithProgress sets p to be told how far each target's walk has got.
func WithProgress(p Progress) Option {
	return func(d *Dispatcher) { d.progress = p }
}

// WithSkip leaves out the directories and files s matches, counting them in
// each target's notes.
func WithSkip(s Skip) Option {
	return func(d *Dispatcher) { d.skip = s }
}

// WithComponentHashes makes the dispatcher take the SHA-256 of every model
// file a Describer names, reading the whole file when no check does (a
// bill of materials needs them). Without it, a digest is taken only of
// content read whole anyway.
func WithComponentHashes(on bool) Option {
	return func(d *Dispatcher) { d.hashAll = on }
}

// WithExpander has x open the archives among a target's artifacts and hand
// their members to every check that does not read archives itself
// (ArchiveReader).
func WithExpander(x Expander) Option {
	return func(d *Dispatcher) { d.expander = x }
}

// NewDispatcher returns a dispatcher over the given scanners.
func NewDispatcher(scs []Scanner, opts ...Option) *Dispatcher {
	d := &Dispatcher{scanners: scs, workers: 4, memLimit: 32 << 20, perRule: MaxFindingsPerRule}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Run scans every source and returns the result with findings in a
// deterministic order: the same input gives a byte-identical report.
func (d *Dispatcher) Run(ctx context.Context, sources ...Source) *Result {
	res := &Result{Version: ReportVersion, Targets: []Target{}, Findings: []Finding{}, Errors: []Error{}}
	order := map[string]int{}
	for i, src := range sources {
		t := src.Target()
		res.Targets = append(res.Targets, t)
		order[t.Name] = i
	}
	// A Fanout source's further sources join the list as it finishes.
	for i := 0; i < len(sources); i++ {
		src := sources[i]
		s := &sink{d: d, sem: make(chan struct{}, d.workers), comps: &components{}}
		if !d.skip.Empty() {
			s.skip = &skipped{Skip: d.skip}
		}
		s.ctx = d.walkContext(ctx, s)
		if d.progress != nil {
			d.progress.Start(res.Targets[i])
		}
		err := src.Walk(s.ctx, s)
		// A source may learn facts while it walks (a digest, a note).
		res.Targets[i] = src.Target()
		if err != nil {
			s.Error(Error{Target: res.Targets[i].Name, Message: err.Error()})
		}
		if note, n := s.skip.note(); n > 0 {
			res.Targets[i].Notes = append(res.Targets[i].Notes, note)
			res.Targets[i].Skipped = n
		}
		s.finish(res.Targets[i])
		if d.progress != nil {
			d.progress.Finish(res.Targets[i])
		}
		res.Findings = append(res.Findings, s.findings...)
		res.Errors = append(res.Errors, s.errs...)
		res.Components = append(res.Components, s.comps.sorted(res.Targets[i].Name)...)
		if f, ok := src.(Fanout); ok && s.ctx.Err() == nil {
			for _, m := range f.More() {
				t := m.Target()
				if _, dup := order[t.Name]; dup {
					continue
				}
				order[t.Name] = len(sources)
				res.Targets = append(res.Targets, t)
				sources = append(sources, m)
			}
		}
	}
	FingerprintAll(res.Findings, d.workers)
	SortFindings(res.Findings, order)
	res.Findings = slices.CompactFunc(res.Findings, func(a, b Finding) bool {
		return a.Fingerprint == b.Fingerprint && a.Line == b.Line && a.Target == b.Target
	})
	DistinguishRepeats(res.Findings)
	slices.SortStableFunc(res.Errors, func(a, b Error) int {
		return cmp.Or(cmp.Compare(order[a.Target], order[b.Target]), strings.Compare(a.Path, b.Path), strings.Compare(a.Message, b.Message))
	})
	res.Summary = Summarize(res.Findings)
	return res
}

// walkContext is ctx carrying what sources and checks report a target's
// walk through: its components, its skips and its progress.
func (d *Dispatcher) walkContext(ctx context.Context, s *sink) context.Context {
	ctx = context.WithValue(ctx, componentsKey{}, s.comps)
	if s.skip != nil {
		ctx = context.WithValue(ctx, skipKey{}, s.skip)
	}
	if d.progress != nil {
		ctx = ProgressContext(ctx, d.progress)
	}
	return ctx
}

// DistinguishRepeats gives the repeats of one finding in one target (the
// same rule, path, layer, commit, evidence and message: nine identical
// torch.load calls in a file) fingerprints of their own, in line order, with
// OccurrenceFingerprint; the first keeps its fingerprint. fs must be in
// report order (SortFindings) with exact duplicates removed.
func DistinguishRepeats(fs []Finding) {
	type key struct{ target, fp string }
	seen := map[key]int{}
	for i := range fs {
		k := key{fs[i].Target, fs[i].Fingerprint}
		n := seen[k]
		seen[k] = n + 1
		fs[i].Fingerprint = OccurrenceFingerprint(fs[i].Fingerprint, n)
	}
}

// Summarize counts findings by severity.
func Summarize(fs []Finding) Summary {
	var s Summary
	for _, f := range fs {
		s.Add(f)
	}
	return s
}

// SortFindings puts findings in report order: target (in the order given by
// order), path, line, then rule and the rest so that the order is total.
func SortFindings(fs []Finding, order map[string]int) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(order[a.Target], order[b.Target]),
			strings.Compare(a.Target, b.Target),
			strings.Compare(a.Path, b.Path),
			cmp.Compare(a.Line, b.Line),
			strings.Compare(a.Layer, b.Layer),
			strings.Compare(a.Commit, b.Commit),
			strings.Compare(a.RuleID, b.RuleID),
			strings.Compare(a.Message, b.Message),
			strings.Compare(a.Evidence, b.Evidence),
			strings.Compare(a.Fingerprint, b.Fingerprint),
		)
	})
}

type sink struct {
	d     *Dispatcher
	ctx   context.Context
	sem   chan struct{}
	comps *components
	skip  *skipped
	// rec, when set, records what checks keep for ArtifactResult.
	rec *recording

	mu       sync.Mutex
	findings []Finding
	errs     []Error
}

func (s *sink) Error(e Error) {
	s.mu.Lock()
	s.errs = append(s.errs, e)
	s.mu.Unlock()
}

func (s *sink) add(fs []Finding) {
	s.mu.Lock()
	s.findings = append(s.findings, fs...)
	s.mu.Unlock()
}

func (s *sink) Artifact(a *Artifact, r io.Reader) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if s.skip.skipFile(a) {
		if s.rec != nil {
			s.rec.mu.Lock()
			s.rec.skipped = append(s.rec.skipped, a.Path)
			s.rec.mu.Unlock()
		}
		return nil // counted in the target's notes
	}
	if s.d.progress != nil && a.Container == "" {
		defer s.d.progress.Scanned(a.Size)
	}
	c, cleanup, err := s.open(a, r)
	if err != nil {
		s.Error(Error{Target: a.Target, Path: a.Path, Message: err.Error()})
		return nil
	}
	if c == nil {
		return nil // nobody wants it
	}
	defer cleanup()

	var g errgroup.Group
	var mu sync.Mutex
	var found []Finding
	for _, sc := range c.wanted {
		g.Go(func() error {
			select {
			case s.sem <- struct{}{}:
			case <-s.ctx.Done():
				return s.ctx.Err()
			}
			defer func() { <-s.sem }()
			ctx := s.ctx
			if k, ok := sc.(StateKeeper); ok && s.rec != nil {
				ctx = context.WithValue(ctx, stateKey{}, &stateRecorder{name: k.StateName(), rec: s.rec})
			}
			fs, err := scanSafely(ctx, sc, a, io.NewSectionReader(c.ra, 0, c.size))
			if err != nil {
				s.Error(Error{Target: a.Target, Path: a.Path, Message: fmt.Sprintf("%s check: %v", sc.Check(), err)})
			}
			mu.Lock()
			found = append(found, fs...)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	scrubSecrets(found)
	if s.d.inline != nil && c.data != nil {
		s.d.inline(a, c.data, found)
	}
	s.add(capFindings(found, s.d.perRule))
	if c.expand {
		// Members go to this sink, one after another, so that a source
		// that records what an artifact gave (ResultSink) records them too.
		fs, err := s.d.expander.Expand(s.ctx, a, io.NewSectionReader(c.ra, 0, c.size), s)
		if err != nil {
			s.Error(Error{Target: a.Target, Path: a.Path, Message: err.Error()})
		}
		s.add(fs)
	}
	return nil
}

// MaxFindingsPerRule is how many findings of one rule one artifact keeps by
// default; the rest are summed up in one more finding.
const MaxFindingsPerRule = 100

// capFindings keeps, of each rule, the first limit findings of one artifact
// (not suppressed ones first) and replaces the rest by one finding that says
// how many more there were and carries their highest severity: a hostile
// file must not turn into a report of millions of lines.
func capFindings(fs []Finding, limit int) []Finding {
	if limit <= 0 || len(fs) <= limit {
		return fs
	}
	count := map[string]int{}
	for _, f := range fs {
		count[f.RuleID]++
	}
	over := false
	for _, n := range count {
		over = over || n > limit
	}
	if !over {
		return fs
	}
	// Unsuppressed findings first, so that the ones kept are those that count.
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Compare(min(len(a.Suppressed), 1), min(len(b.Suppressed), 1))
	})
	kept := map[string]int{}
	rest := map[string]*Finding{}
	var order []string
	out := fs[:0:0]
	for _, f := range fs {
		if kept[f.RuleID] < limit {
			kept[f.RuleID]++
			out = append(out, f)
			continue
		}
		r := rest[f.RuleID]
		if r == nil {
			r = &Finding{RuleID: f.RuleID, Check: f.Check, Severity: f.Severity, Target: f.Target, Path: f.Path,
				Layer: f.Layer, Commit: f.Commit, Suppressed: f.Suppressed}
			rest[f.RuleID] = r
			order = append(order, f.RuleID)
		}
		r.Line++ // counts them until the message is written
		r.Severity = max(r.Severity, f.Severity)
		if f.Suppressed == "" {
			r.Suppressed = ""
		}
	}
	for _, id := range order {
		r := rest[id]
		r.Message = fmt.Sprintf("... and %d more %s findings in this file, not listed one by one: at most %d per file and rule are reported. Fix the ones above and scan again.", r.Line, id, limit)
		r.Evidence = fmt.Sprintf("%d more", r.Line)
		r.Line = 0
		out = append(out, *r)
	}
	return out
}

// scrubSecrets redacts, in every finding of one artifact, the secret values
// that any check found in it: another check's evidence or message (a
// command line, a URL) must not show what the secrets check hides.
func scrubSecrets(fs []Finding) {
	var secrets []string
	for _, f := range fs {
		if len(f.Secret) >= 6 && !slices.Contains(secrets, f.Secret) {
			secrets = append(secrets, f.Secret)
		}
	}
	for i := range fs {
		for _, sec := range secrets {
			fs[i].Evidence = strings.ReplaceAll(fs[i].Evidence, sec, Redact(sec))
			fs[i].Message = strings.ReplaceAll(fs[i].Message, sec, Redact(sec))
		}
	}
}

// finish lets every check that judges whole targets report on t, after its
// walk. Findings about files of a partly walked target still count.
func (s *sink) finish(t Target) {
	if s.ctx.Err() != nil {
		return
	}
	for _, sc := range s.d.scanners {
		f, ok := sc.(TargetFinisher)
		if !ok {
			continue
		}
		fs, err := finishSafely(s.ctx, f, t)
		if err != nil {
			s.Error(Error{Target: t.Name, Message: fmt.Sprintf("%s check: %v", sc.Check(), err)})
		}
		s.add(fs)
	}
}

func finishSafely(ctx context.Context, f TargetFinisher, t Target) (fs []Finding, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (panic): %v", p)
		}
	}()
	return f.FinishTarget(ctx, t)
}

// scanSafely calls sc.Scan and turns a panic into an error, so that one
// scanner's bug on one hostile file cannot end the run or hide other results.
func scanSafely(ctx context.Context, sc Scanner, a *Artifact, c Content) (fs []Finding, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (panic): %v", p)
		}
	}()
	return sc.Scan(ctx, a, c)
}

type opened struct {
	ra     io.ReaderAt
	size   int64
	data   []byte // the whole content when it is in memory
	wanted []Scanner
	expand bool // an archive whose members the expander hands over
}

// prefix returns how much of a streamed artifact the checks that want it
// read, when every one of them reads no more than a prefix that fits in
// memory (PrefixReader); at least the head is kept. An archive the expander
// opens is read whole.
func (s *sink) prefix(o *opened, a *Artifact, head []byte) (int64, bool) {
	if o.expand || len(o.wanted) == 0 {
		return 0, false
	}
	limit := int64(len(head))
	for _, sc := range o.wanted {
		p, ok := sc.(PrefixReader)
		if !ok {
			return 0, false
		}
		n, ok := p.Prefix(a, head)
		if !ok || n > s.d.memLimit {
			return 0, false
		}
		limit = max(limit, n)
	}
	return limit, true
}

// readPrefix reads the first limit bytes of the stream head+r into memory
// and the rest into h (the component's digest; nil: discarded). size is the
// stream's whole length.
func readPrefix(head []byte, r io.Reader, limit int64, h hash.Hash) (p io.ReaderAt, size int64, err error) {
	buf := make([]byte, limit)
	n := copy(buf, head)
	m, err := io.ReadFull(r, buf[n:])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, 0, fmt.Errorf("read: %w", err)
	}
	buf = buf[:n+m]
	var rest int64
	if h != nil {
		h.Write(buf)
		rest, err = io.Copy(h, r)
	} else {
		rest, err = io.Copy(io.Discard, r)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read: %w", err)
	}
	size = int64(len(buf)) + rest
	return PrefixContent(buf, size), size, nil
}

// PrefixContent is the content the dispatcher hands a PrefixReader for an
// artifact of size bytes of which only the first len(data) are kept: a read
// past them is ErrPastPrefix. scannertest.CheckPrefix scans through it.
func PrefixContent(data []byte, size int64) io.ReaderAt {
	return &prefixContent{data: data, size: size}
}

type prefixContent struct {
	data []byte
	size int64
}

func (c *prefixContent) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("read at a negative offset")
	}
	if off >= c.size {
		return 0, io.EOF
	}
	n := 0
	if off < int64(len(c.data)) {
		n = copy(p, c.data[off:])
	}
	switch {
	case n == len(p):
		return n, nil
	case off+int64(n) >= c.size:
		return n, io.EOF
	}
	return n, ErrPastPrefix
}

// open reads the head, asks every scanner, and makes the content readable at
// any offset for those that want it. It returns nil when nobody does.
func (s *sink) open(a *Artifact, r io.Reader) (*opened, func(), error) {
	nop := func() {}
	// Content a source already holds in memory (MemContent: an image
	// layer's small files) is used where it is, not copied again.
	mem, isMem := memBytesOf(r)
	ra, isRA := r.(io.ReaderAt)
	var head []byte
	var n int
	var err error
	switch {
	case isMem:
		head = mem[:min(len(mem), HeadSize)]
		n = len(head)
	case isRA:
		head = make([]byte, HeadSize)
		n, err = ra.ReadAt(head, 0)
	default:
		head = make([]byte, HeadSize)
		n, err = io.ReadFull(r, head)
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nop, fmt.Errorf("read: %w", err)
	}
	head = head[:n]
	var comp *Component
	if a.Container == "" {
		comp = s.describe(a, head)
	}
	// A member goes to the checks that do not read archives themselves.
	member := func(sc Scanner) bool {
		r, ok := sc.(ArchiveReader)
		return a.Container != "" && ok && r.ReadsArchives()
	}
	var wanted []Scanner
	for _, sc := range s.d.scanners {
		if !member(sc) && sc.Wants(a, head) {
			wanted = append(wanted, sc)
		}
	}
	expand := s.d.expander != nil && a.Container == "" && s.d.expander.Expands(a, head)
	if len(wanted) == 0 && !expand {
		s.addComponent(comp, nil, 0, false)
		return nil, nop, nil
	}
	for _, sc := range s.d.scanners {
		if r, ok := sc.(Rider); ok && !member(sc) && !slices.Contains(wanted, sc) && r.Rides(a, head) {
			wanted = append(wanted, sc)
		}
	}
	o := &opened{wanted: wanted, expand: expand}
	switch {
	case isMem:
		o.data = mem
	case isRA && a.Size <= SmallFile:
		// The head is already read: read only the rest.
		buf := make([]byte, max(a.Size, int64(n)))
		copy(buf, head)
		m := 0
		if int64(n) < a.Size {
			m, err = ra.ReadAt(buf[n:], int64(n))
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, nop, fmt.Errorf("read: %w", err)
			}
		}
		o.data = buf[:n+m]
	case isRA:
		o.ra, o.size = ra, a.Size
		// Read whole to hash only on local disk: a Hub file or an OCI model
		// layer read in ranges would be downloaded whole.
		s.addComponent(comp, ra, a.Size, s.d.hashAll && localKind(a.TargetKind))
		return o, nop, nil
	case int64(n) < HeadSize:
		o.data = head // the head is the whole content
	case a.Size >= 0 && a.Size <= s.d.memLimit:
		buf := bytes.NewBuffer(make([]byte, 0, a.Size))
		buf.Write(head)
		if _, err := io.Copy(buf, r); err != nil {
			return nil, nop, fmt.Errorf("read: %w", err)
		}
		o.data = buf.Bytes()
	default:
		var h hash.Hash // the component's digest, taken on the way
		if s.hashes(comp) {
			h = sha256.New()
		}
		if limit, ok := s.prefix(o, a, head); ok {
			// Only a prefix is read: keep it, read the rest past.
			p, size, err := readPrefix(head, r, limit, h)
			if err != nil {
				return nil, nop, err
			}
			o.ra, o.size = p, size
			s.addComponentSum(comp, h, size)
			return o, nop, nil
		}
		// Spool to an anonymous file: its name is ours, never the artifact's,
		// and it is unlinked at once.
		f, err := os.CreateTemp(s.d.tempDir, "mlwarden-spool-*")
		if err != nil {
			return nil, nop, fmt.Errorf("spool: %w", err)
		}
		os.Remove(f.Name())
		var w io.Writer = f
		if h != nil {
			w = io.MultiWriter(f, h)
		}
		size, err := io.Copy(w, io.MultiReader(bytes.NewReader(head), r))
		if err != nil {
			f.Close()
			return nil, nop, fmt.Errorf("spool: %w", err)
		}
		o.ra, o.size = f, size
		s.addComponentSum(comp, h, size)
		return o, func() { f.Close() }, nil
	}
	o.ra, o.size = memReaderAt(o.data), int64(len(o.data))
	s.addComponent(comp, o.ra, o.size, true)
	return o, nop, nil
}
