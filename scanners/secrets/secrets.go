// Package secrets is the secrets check: it finds leaked credentials in text
// artifacts with gitleaks' detector (keyword prefilter, regexps, entropy,
// allowlists, decoding), gitleaks' default rules and mlwarden's ML-platform
// rules (rules/secrets.toml).
//
// Notebooks are decoded before scanning (cell sources and outputs), image
// configs are reduced to their Env and history, and model weights are left to
// the models check, which hands strings it finds inside them to ScanBytes.
package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/internal/literal"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
	"github.com/mlwarden/mlwarden/scanners/suppress"
)

// DefaultMaxBytes is how much of one artifact is scanned by default.
const DefaultMaxBytes = 256 << 20

// chunkSize is how much text is handed to the detector at once; chunks end at
// a line break so that lines stay whole.
const chunkSize = 4 << 20

// decodeDepth is how many rounds of base64/hex/percent/unicode-escape decoding
// gitleaks applies (its library default is 0: nothing decoded).
const decodeDepth = 2

// Scanner is the secrets check. It is safe for concurrent use.
type Scanner struct {
	configFile string
	maxBytes   int64
	wantLazy   bool
	noWindows  bool // hand gitleaks whole fragments (the tests' reference)
	noPrefixed bool // let gitleaks run the prefixed rules too (the tests' reference)

	rs    *ruleSet
	det   *engine.Detector        // with decoding passes
	plain func() fragmentDetector // without; built on first use (see mayDecode, prefixed.go)
	lazy  *lazyRules              // WithLazyRules: det and plain are nil
	// described is the check's rule list and its maps, made at first use:
	// describing the ~250 rules was a tenth of a clean sbatch job's process
	// (docs/design/sbatch-hook.md), which lists none.
	described func() *described
	// binKeys matches the specific rules' keywords (the strings pass), and
	// bin is a detector over those rules only, built on first use.
	binKeys func() *literal.Finder
	bin     func() fragmentDetector
	// win cuts fragments into keyword windows (windows.go); nil with lazy
	// rules, which compile per input, or when a rule has no keyword.
	win *windower
}

// Option configures a Scanner.
type Option func(*Scanner)

// WithConfigFile adds a user rules file in gitleaks' TOML format. Its rules
// extend the built-in ones: a rule with a built-in id overrides it, and
// [extend] disabledRules turns built-in rules off.
func WithConfigFile(path string) Option {
	return func(s *Scanner) { s.configFile = path }
}

// WithLazyRules compiles, for each input, only the built-in rules that can
// run on it, instead of all of them up front: for a process that scans one
// small file (the sbatch hook run per job), not for many. It has no effect
// with WithConfigFile.
func WithLazyRules() Option {
	return func(s *Scanner) { s.wantLazy = true }
}

// WithMaxBytes sets how much of one artifact is scanned (default
// DefaultMaxBytes). Content beyond it is reported as not scanned.
func WithMaxBytes(n int64) Option {
	return func(s *Scanner) {
		if n > 0 {
			s.maxBytes = n
		}
	}
}

// New returns the secrets check. The built-in rules are compiled once per
// process and shared.
func New(opts ...Option) (*Scanner, error) {
	s := &Scanner{maxBytes: DefaultMaxBytes}
	for _, o := range opts {
		o(s)
	}
	if s.wantLazy && s.configFile == "" {
		l, err := builtinLazy()
		if err != nil {
			return nil, err
		}
		if l != nil {
			s.lazy, s.rs = l, l.describing()
			s.describe()
			return s, nil
		}
	}
	rs, err := builtin()
	if err != nil {
		return nil, err
	}
	det, plain := builtinDetector(rs), builtinPlain(rs)
	if s.configFile != "" {
		if rs, err = rs.withUserFile(s.configFile); err != nil {
			return nil, err
		}
		det, plain = newDetector(rs), plainDetector(rs, true)
	}
	if s.noPrefixed {
		plain = plainDetector(rs, false)
	}
	s.rs, s.det, s.plain = rs, det, plain
	s.describe()
	return s, nil
}

// describe fills the check's rule list and its maps from s.rs.
func (s *Scanner) describe() {
	s.binKeys = sync.OnceValue(func() *literal.Finder { return binaryKeywords(s.rs) })
	if s.lazy == nil && !s.noWindows {
		s.win = newWindower(s.rs)
	}
	rs := s.rs
	s.bin = sync.OnceValue(func() fragmentDetector { return binaryDetector(rs) })
	s.described = sync.OnceValue(func() *described {
		d := &described{}
		d.rules, d.byID = describe(rs)
		d.gitleaksID = make(map[string]string, len(d.byID))
		for id, r := range d.byID {
			d.gitleaksID[r.ID] = id
		}
		return d
	})
}

// ruleOf describes the rule of g, as the rule list does (describe): one
// finding in a per-job process describes one rule, not all.
func (s *Scanner) ruleOf(g engine.Finding) scanners.Rule {
	if cr, ok := s.rs.cfg.Rules[g.RuleID]; ok && !cr.SkipReport {
		return describeRule(s.rs, g.RuleID, cr.Description)
	}
	return describeRule(s.rs, g.RuleID, g.Description)
}

// Rule returns the rule of Rules() with the check's rule ID id, describing
// only it (scanners.RuleLookup).
func (s *Scanner) Rule(id string) (scanners.Rule, bool) {
	name, ok := strings.CutPrefix(id, scanners.CheckSecrets+"/")
	if !ok {
		return scanners.Rule{}, false
	}
	for _, r := range []scanners.Rule{ruleTooLarge, RuleArchiveNotScanned, RuleArchiveMemberEscapes} {
		if r.ID == id {
			return r, true
		}
	}
	gid := name // gitleaks' id, unless mlwarden renames a rule to name
	for g, n := range s.rs.meta().Names {
		if n == name {
			gid = g
			break
		}
	}
	cr, ok := s.rs.cfg.Rules[gid]
	if !ok || cr.SkipReport {
		return scanners.Rule{}, false
	}
	r := describeRule(s.rs, gid, cr.Description)
	return r, r.ID == id
}

// described is the check's rule list, by gitleaks rule id, and the check's
// rule IDs mapped back to gitleaks rule ids.
type described struct {
	rules      []scanners.Rule
	byID       map[string]scanners.Rule
	gitleaksID map[string]string
}

func newDetector(rs *ruleSet) *engine.Detector {
	d := keepAllowed(engine.NewDetector(rs.cfg))
	d.MaxDecodeDepth = decodeDepth
	return d
}

// plainDetector returns a detector without decoding passes over rs, built
// when first asked for: with prefixed, one that runs the rules with a lazy
// prefix itself (prefixed.go).
func plainDetector(rs *ruleSet, prefixed bool) func() fragmentDetector {
	return sync.OnceValue(func() fragmentDetector {
		if prefixed {
			return newPrefixedDetector(rs.cfg)
		}
		return keepAllowed(engine.NewDetector(rs.cfg))
	})
}

// keepAllowed makes d report findings on lines marked gitleaks:allow, which
// gitleaks drops: the check reports them as suppressed (suppress.SecretAllowed),
// so that what a marker hides is counted, not lost.
func keepAllowed(d *engine.Detector) *engine.Detector {
	d.IgnoreGitleaksAllow = true
	return d
}

// Check returns "secrets".
func (s *Scanner) Check() string { return scanners.CheckSecrets }

// Rules lists every rule the check can report.
func (s *Scanner) Rules() []scanners.Rule {
	return append([]scanners.Rule(nil), s.described().rules...)
}

// weightExts are model weight and tensor files: the models check reads them
// (and hands their strings to ScanBytes); regexes over tensor bytes find only
// noise.
var weightExts = map[string]bool{
	".safetensors": true, ".pt": true, ".pth": true, ".bin": true, ".ckpt": true,
	".gguf": true, ".ggml": true, ".onnx": true, ".h5": true, ".hdf5": true,
	".keras": true, ".pb": true, ".tflite": true, ".npy": true, ".npz": true,
	".pkl": true, ".pickle": true, ".joblib": true, ".msgpack": true, ".mar": true,
	".engine": true, ".plan": true, ".nemo": true, ".mlmodel": true, ".params": true,
	".arrow": true, ".parquet": true, ".tfrecord": true,
}

// compressedMagic starts compressed data, whose printable strings are
// noise (archives of models are the models check's).
var compressedMagic = [][]byte{
	[]byte("PK\x03\x04"), {0x1f, 0x8b}, []byte("BZh"), {0xfd, '7', 'z', 'X', 'Z', 0},
	[]byte("7z\xbc\xaf\x27\x1c"), {0x28, 0xb5, 0x2f, 0xfd}, {0x04, 0x22, 0x4d, 0x18},
}

// modelContent reports whether a binary head is a format the models check
// parses and takes strings from whatever its name (a pickle of protocol 2
// to 5, PyTorch's legacy format, NumPy, GGUF, HDF5, safetensors): its strings
// reach the check through ScanBytes, and the strings pass over it would
// report them twice.
func modelContent(h []byte) bool {
	switch {
	case len(h) >= 2 && h[0] == 0x80 && h[1] >= 2 && h[1] <= 5:
		return true
	case bytes.HasPrefix(h, []byte("\x93NUMPY")), bytes.HasPrefix(h, []byte("GGUF")), bytes.HasPrefix(h, []byte("\x89HDF\r\n\x1a\n")):
		return true
	case len(h) >= 10 && h[8] == '{' && h[9] == '"':
		n := uint64(h[0]) | uint64(h[1])<<8 | uint64(h[2])<<16 | uint64(h[3])<<24 | uint64(h[4])<<32 | uint64(h[5])<<40 | uint64(h[6])<<48 | uint64(h[7])<<56
		return n >= 2 && n < 100<<20
	}
	return false
}

// Wants reports whether a is worth scanning for secrets: image configs,
// git patches, text files, and binary files that are not model weights or
// compressed data (their printable strings are scanned, as strings(1) finds
// them).
func (s *Scanner) Wants(a *scanners.Artifact, head []byte) bool {
	switch a.Kind {
	case scanners.ArtifactImageConfig:
		return true
	case scanners.ArtifactPatch, scanners.ArtifactFile, "":
	default:
		return false
	}
	if weightExts[path.Ext(scanners.Base(a.Path))] {
		return false
	}
	if !scanners.IsBinary(head) {
		return true
	}
	if modelContent(head) {
		return false // the models check's parsers hand its strings over (catalog)
	}
	for _, m := range compressedMagic {
		if bytes.HasPrefix(head, m) {
			return false
		}
	}
	return true
}

// Scan looks for secrets in one artifact.
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	if a.Kind == scanners.ArtifactImageConfig {
		data, _, err := scanners.ReadAll(c, s.maxBytes)
		if err != nil {
			return nil, fmt.Errorf("read image config: %w", err)
		}
		return s.scanImageConfig(ctx, a, data), nil
	}
	head := make([]byte, min(c.Size(), scanners.HeadSize))
	if _, err := c.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read: %w", err)
	}
	if a.Kind != scanners.ArtifactPatch && scanners.IsBinary(head) {
		return s.scanStrings(ctx, a, c)
	}
	if isNotebook(a.Path) && a.Kind != scanners.ArtifactPatch && c.Size() <= s.maxBytes {
		data, _, err := scanners.ReadAll(c, s.maxBytes)
		if err != nil {
			return nil, fmt.Errorf("read notebook: %w", err)
		}
		if fs, ok := s.scanNotebook(ctx, a, data); ok {
			return fs, nil
		}
		// Not a notebook after all: scan it as text.
		return s.scanText(ctx, a, data, 1), nil
	}
	return s.scanStream(ctx, a, c)
}

// minString is the shortest printable run the strings pass keeps, as
// strings -n 8.
const minString = 8

// scanStrings scans the printable strings of a binary file (runs of at
// least minString printable ASCII bytes, as strings(1) finds them), so that
// a token compiled into an executable or stored in a binary format is still
// reported. Only runs holding a keyword of a specific rule are handed to the
// detector, each on its own and without the decoding pass (batched, every
// rule whose keyword is anywhere in a batch runs over all of it: 3.4 times
// slower still): binaries are full
// of key-like symbol names and base64-like data, and the generic rule and
// decoding over all of them cost 20 times the text scan and matched across
// unrelated strings (a PEM header constant and a footer constant). Findings
// have no line; memory is one chunk.
func (s *Scanner) scanStrings(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	size := c.Size()
	limit := min(size, s.maxBytes)
	buf := make([]byte, min(int64(chunkSize), limit))
	var run []byte
	var runAt int64 // the byte offset of run in the file
	var out []scanners.Finding
	where := func(engine.Finding) (int, string) {
		return 0, fmt.Sprintf("in a printable string at byte offset %d inside the binary file %s", runAt, a.Path)
	}
	keys := s.binKeys()
	endRun := func() {
		// A run is printable ASCII: the finder's case folding is
		// bytes.ToLower's there.
		if len(run) >= minString && keys != nil {
			if keys.NextBytes(run, 0) >= 0 {
				raw := string(run)
				det := s.bin()
				if s.lazy != nil {
					det = s.binaryFor(raw)
				}
				gfs := det.DetectContext(ctx, engine.Fragment{Raw: raw, FilePath: a.Path + "!strings", CommitSHA: a.Commit, StartLine: 1})
				out = append(out, s.convert(a, gfs, where, around{})...)
			}
		}
		run = run[:0]
	}
	for off := int64(0); off < limit; {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		m, err := c.ReadAt(buf[:min(int64(len(buf)), limit-off)], off)
		if m == 0 && err != nil {
			return out, fmt.Errorf("read: %w", err)
		}
		base := off
		off += int64(m)
		for b := buf[:m]; len(b) > 0; {
			// The printable run at the start of b, then what follows it.
			n := 0
			for n < len(b) && stringByte[b[n]] {
				n++
			}
			if n > 0 {
				if len(run) == 0 {
					runAt = base + int64(m-len(b))
				}
				if len(run)+n >= maxFragment {
					n = min(n, maxFragment-len(run))
					run = append(run, b[:n]...)
					endRun()
				} else {
					run = append(run, b[:n]...)
				}
				b = b[n:]
				continue
			}
			endRun()
			for len(b) > 0 && !stringByte[b[0]] {
				b = b[1:]
			}
		}
	}
	endRun()
	if size > s.maxBytes {
		return append(out, s.tooLarge(a, size)), s.incomplete(size)
	}
	return out, nil
}

// stringByte marks the bytes of a strings(1) run: printable ASCII and tab.
var stringByte = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = true
	}
	t['\t'] = true
	return t
}()

// binaryFor is, with lazy rules, the strings pass's detector for one
// printable run: binaryDetector's rules that can run on it.
func (s *Scanner) binaryFor(raw string) fragmentDetector {
	if d, err := s.lazy.plainFor(raw, true); err == nil {
		return d
	}
	if rs, err := builtin(); err == nil {
		return binaryDetector(rs) // not reached: the built-in rules compile
	}
	return s.bin()
}

// binaryDetector is a detector without decoding over the specific rules that
// have keywords: the generic rule over binaries' symbol names is most of the
// cost and none of the findings.
func binaryDetector(rs *ruleSet) fragmentDetector {
	return newPrefixedDetector(binaryConfig(rs))
}

// binaryConfig is rs's config with the rules of binaryDetector only.
func binaryConfig(rs *ruleSet) config.Config {
	cfg := rs.cfg
	cfg.Rules, cfg.Keywords, cfg.OrderedRules = map[string]config.Rule{}, map[string]struct{}{}, nil
	for id, r := range rs.cfg.Rules {
		if specificity(id) == 0 || len(r.Keywords) == 0 {
			continue
		}
		cfg.Rules[id] = r
		cfg.OrderedRules = append(cfg.OrderedRules, id)
		for _, k := range r.Keywords {
			cfg.Keywords[strings.ToLower(k)] = struct{}{}
		}
	}
	sort.Strings(cfg.OrderedRules)
	return cfg
}

// binaryKeywords is a finder of the keywords of every specific rule (not
// the generic ones, not those without keywords), for the strings pass: an
// Aho-Corasick trie over a lower-cased copy of each run was a third of the
// pass's time on Debian's Python packages (their shared libraries).
func binaryKeywords(rs *ruleSet) *literal.Finder {
	var kws []string
	for id, r := range rs.cfg.Rules {
		if specificity(id) == 0 {
			continue
		}
		for _, k := range r.Keywords {
			kws = append(kws, strings.ToLower(k))
		}
	}
	if len(kws) == 0 {
		return nil
	}
	sort.Strings(kws)
	return literal.New(slices.Compact(kws))
}

// scanStream scans content in line-aligned chunks, so memory does not grow
// with the file. A chunk that is all one line is scanned whole, and its last
// windowOverlap bytes again with the next chunk, so that a credential across
// the chunk's edge is found.
func (s *Scanner) scanStream(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	size := c.Size()
	limit := min(size, s.maxBytes)
	if b, ok := scanners.MemBytes(c); ok && size <= s.maxBytes && size <= chunkSize && int64(len(b)) >= size {
		// Held in memory and one chunk: scanned where it is, as the loop
		// below would scan its one chunk (a copy of it).
		return s.scanText(ctx, a, b[:size], 1), nil
	}
	var out []scanners.Finding
	buf := make([]byte, min(int64(chunkSize), limit))
	var carry []byte
	line := 1
	var off int64
	for off < limit {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		n := min(int64(len(buf)), limit-off)
		m, err := c.ReadAt(buf[:n], off)
		if m == 0 && err != nil {
			return out, fmt.Errorf("read: %w", err)
		}
		off += int64(m)
		// The chunk is buf itself unless a partial line is carried over:
		// nothing scanText returns holds on to it (findings are strings).
		chunk := buf[:m]
		if len(carry) > 0 {
			chunk = append(carry, buf[:m]...)
		}
		carry = nil
		if off < limit {
			// Keep the partial last line for the next chunk; of a chunk that
			// is one enormous line, keep its tail.
			switch i := bytes.LastIndexByte(chunk, '\n'); {
			case i >= 0 && i < len(chunk)-1:
				carry = append([]byte(nil), chunk[i+1:]...)
				chunk = chunk[:i+1]
			case i < 0 && len(chunk) > windowOverlap:
				carry = append([]byte(nil), chunk[len(chunk)-windowOverlap:]...)
			}
		}
		out = append(out, s.scanText(ctx, a, chunk, line)...)
		line += bytes.Count(chunk, []byte{'\n'})
	}
	if len(carry) > 0 {
		out = append(out, s.scanText(ctx, a, carry, line)...)
	}
	if size > s.maxBytes {
		return append(out, s.tooLarge(a, size)), s.incomplete(size)
	}
	return out, nil
}

// tooLarge is the finding for content past the scan limit.
func (s *Scanner) tooLarge(a *scanners.Artifact, size int64) scanners.Finding {
	return scanners.At(a, ruleTooLarge, 0, fmt.Sprintf(
		"Only the first %d MiB of this %d MiB file were scanned for secrets: a credential further in would be missed. Split the file, keep logs and data dumps out of the target, or raise the limit.",
		s.maxBytes>>20, size>>20))
}

// incomplete is the error that makes a run whose file went past the scan
// limit exit 2: a limit never passes silently.
func (s *Scanner) incomplete(size int64) error {
	return fmt.Errorf("%w: secrets scanned the first %d of %d bytes", scanners.ErrIncomplete, s.maxBytes, size)
}

// ScanBytes scans data that came from inside artifact a (a string in a
// pickle, a model's metadata) and returns findings located at a, without a
// line. It is a scanners.BytesScanner.
func (s *Scanner) ScanBytes(ctx context.Context, a *scanners.Artifact, data []byte) []scanners.Finding {
	if int64(len(data)) > s.maxBytes {
		data = data[:s.maxBytes]
	}
	// The path gitleaks sees gets a suffix so that its path allowlist (which
	// skips *.bin files, say) does not drop strings from inside weights.
	gfs := s.detectAt(ctx, a.Path+"!strings", a.Commit, data, 1)
	return s.convert(a, gfs, func(engine.Finding) (int, string) {
		return 0, "in a string inside " + a.Path
	}, around{text: data, first: 1})
}

// scanText runs the detector on text whose first line is line firstLine of
// a's content and turns its findings into mlwarden findings.
func (s *Scanner) scanText(ctx context.Context, a *scanners.Artifact, text []byte, firstLine int) []scanners.Finding {
	return s.convert(a, s.detect(ctx, a, text, firstLine), func(f engine.Finding) (int, string) {
		return f.StartLine, ""
	}, around{text: text, first: firstLine})
}

func (s *Scanner) detect(ctx context.Context, a *scanners.Artifact, text []byte, firstLine int) []engine.Finding {
	return s.detectAt(ctx, a.Path, a.Commit, text, firstLine)
}

// detectAt runs the detector on text, fragment by fragment, as if it were
// line firstLine onwards of the file at path in commit.
func (s *Scanner) detectAt(ctx context.Context, path, commit string, text []byte, firstLine int) []engine.Finding {
	var out []engine.Finding
	line := firstLine
	windows := s.win != nil && !s.win.wholeFile(path)
	var blocks *literal.Finder
	// With the prefixed plain detector, one pass of its literals over a
	// fragment makes the windows and serves every plain window: the
	// windower's keyword pass, the block rules' and the detector's own
	// were three passes over the same text, most of it in windows.
	var pd *prefixedDetector
	var kwIDs, blockIDs []bool
	var all, part []litHit
	var pf *pathFacts
	if windows {
		if pd, _ = s.plain().(*prefixedDetector); pd != nil {
			kwIDs = s.win.keywordIDs(pd)
		}
		if kwIDs == nil {
			pd = nil
			blocks = s.win.blockFinder(path)
		} else {
			blockIDs = s.win.blockKeywordIDs(path, pd)
		}
	}
	for len(text) > 0 {
		end, next := fragmentEnd(text)
		frag := text[:end]
		text = text[next:]
		var raw string
		if pd != nil {
			// One literal pass over the text; the passes that read values
			// in their context only where a literal occurs (normalize).
			base := normalizeText(frag)
			raw = string(base)
			if all = pd.find(raw, all[:0]); len(all) > 0 {
				if joined, changed := joinValues(base); changed {
					raw = string(joined)
					all = pd.find(raw, all[:0])
				}
			}
		} else {
			raw = string(normalize(frag))
		}
		var det fragmentDetector
		var wins, decWins []span
		whole, giveUp := true, false
		if windows {
			// The decoding detector only for the windows that hold a
			// segment that may decode (windows.go); the plain one for the
			// rest. A gate that gives up hands the fragment over whole.
			var sites []int
			decodeSites(raw, func(at int) bool {
				if at < 0 {
					giveUp = true
					return false
				}
				sites = append(sites, at)
				return true
			})
			det = s.plain()
			if giveUp || len(sites) > 0 {
				det = s.det
			}
			switch {
			case pd != nil:
				if !giveUp && (blockIDs == nil || !anyHit(all, blockIDs)) {
					wins, whole = s.win.windowsBy(raw, sites, nextKeyword(all, kwIDs))
					if whole && len(sites) > 0 {
						// Whole for its keywords: the decoding passes
						// may still keep to the sites' windows.
						if dw, dwhole := s.win.windowsBy(raw, sites, noKeyword); !dwhole {
							decWins = dw
						}
					}
				}
			case giveUp:
			case blocks == nil || blocks.Next(raw, 0) < 0:
				wins, whole = s.win.windows(raw, sites)
			}
		} else {
			det, _ = s.detector(raw)
		}
		if whole {
			wins = []span{{start: 0, end: len(raw)}}
		}
		for _, w := range wins {
			d := det
			if !whole && !w.dec {
				d = s.plain()
			}
			f := engine.Fragment{
				Raw:       raw[w.start:w.end],
				FilePath:  path,
				CommitSHA: commit,
				StartLine: line + w.line,
			}
			if pd != nil {
				hits := all
				if w.start > 0 || w.end < len(raw) {
					part = pd.within(all, w.start, w.end, part[:0]) // never all's array
					hits = part
				}
				if pf == nil {
					pf = pd.facts(f) // one file's
				}
				if d == fragmentDetector(pd) {
					out = append(out, pd.detectHits(ctx, f, hits, pf)...)
				} else {
					out = append(out, pd.detectDecoding(ctx, f, hits, pf, decWins, s.det)...) // decoding.go
				}
				continue
			}
			out = append(out, d.DetectContext(ctx, f)...)
		}
		line += bytes.Count(frag[:next], []byte{'\n'})
	}
	return out
}

// detector picks the detector for one fragment: without the decoding pass
// when nothing in it can decode (see mayDecode), and with lazy rules only
// over the rules whose keywords it holds. Each pick finds what the full
// decoding detector would.
//
// decoding says the detector decodes segments: its findings may come from
// text the raw fragment does not hold, so the fragment goes to it whole.
func (s *Scanner) detector(raw string) (d fragmentDetector, decoding bool) {
	if s.lazy != nil {
		if !mayDecode(raw) {
			if d, err := s.lazy.plainFor(raw, false); err == nil {
				return d, false
			}
		}
		return s.lazy.full(), true
	}
	if !mayDecode(raw) {
		return s.plain(), false // the same findings, without the decoding pass
	}
	return s.det, true
}

// fragmentSize is the text handed to gitleaks' detector at once. gitleaks
// runs a rule's regexp over the whole fragment when the rule's keyword occurs
// anywhere in it, so one "token" in a 100 kB file costs the generic rule's
// regexp over all of it; small fragments keep that cost local.
const fragmentSize = 16 << 10

// maxFragment bounds one fragment; a longer line (minified JSON, a data
// dump on one line) is scanned in windows of this size that overlap by
// windowOverlap bytes, so that a credential across a window's edge is still
// whole in one of them and a long line is never skipped.
const (
	maxFragment   = 64 << 10
	windowOverlap = 8 << 10
)

// fragmentEnd returns where the first fragment of text ends, and where the
// next one starts: at a line break near fragmentSize, but not inside a PEM
// block, so that multi-line private keys stay whole; inside a line longer
// than maxFragment, at maxFragment, the next one starting windowOverlap
// bytes before it.
func fragmentEnd(text []byte) (end, next int) {
	if len(text) <= fragmentSize {
		return len(text), len(text)
	}
	i := bytes.IndexByte(text[fragmentSize:min(len(text), maxFragment)], '\n')
	if i < 0 {
		if len(text) <= maxFragment {
			return len(text), len(text)
		}
		return maxFragment, maxFragment - windowOverlap
	}
	end = fragmentSize + i + 1
	// bytes.Index first: LastIndex has no fast path and cost a tenth of
	// the check's time on text without keys.
	if bytes.Contains(text[:end], []byte("-----BEGIN")) {
		if b := bytes.LastIndex(text[:end], []byte("-----BEGIN")); !bytes.Contains(text[b:end], []byte("-----END")) {
			// A block starts in this fragment and ends after it: extend to its end
			// (bounded, since a key is a few kB).
			if e := bytes.Index(text[end:min(len(text), end+fragmentSize)], []byte("-----END")); e >= 0 {
				if n := bytes.IndexByte(text[end+e:min(len(text), end+e+maxFragment)], '\n'); n >= 0 {
					return end + e + n + 1, end + e + n + 1
				}
			}
		}
	}
	return end, end
}

// convert turns gitleaks findings into mlwarden findings. where maps a
// finding to a content line and a phrase saying where it is (a notebook cell,
// an Env entry); near is the text the findings were made in, for judging a
// match by the lines around it.
func (s *Scanner) convert(a *scanners.Artifact, gfs []engine.Finding, where func(engine.Finding) (int, string), near around) []scanners.Finding {
	for i := range gfs {
		atSecretLine(&gfs[i])
	}
	gfs = dedupe(gfs)
	out := make([]scanners.Finding, 0, len(gfs))
	for _, g := range gfs {
		generic := specificity(g.RuleID) == 0
		if generic && (codeReference(a.Path, g.Line, strings.TrimSpace(g.Secret)) || namedDigest(g.Line, g.Secret) ||
			codeExpression(a.Path, g) || publicByDesign(a.Path, g, near)) {
			continue // pad_token_id=pad_token_id, "key_sha256": "<hex>", key.dtype == torch.bfloat16: not credentials
		}
		if notCredential(g, near, generic) {
			continue // A1b2C3d4E5f6, gpt-4-turbo-browsing, a word after "Dropbox:": see shape.go
		}
		r := s.ruleOf(g)
		line, place := where(g)
		if place == "" {
			place = "in " + a.Path
		}
		secret := strings.TrimSpace(g.Secret)
		red := scanners.Redact(secret)
		msg := fmt.Sprintf("%s (%s) %s: anyone who can read this %s can use the credential. Fix: %s",
			titleOf(r), red, place, readerOf(a), fixOf(s.rs, g.RuleID))
		if hasTag(g.Tags, "decoded:") {
			msg += " (found after decoding " + decodedTag(g.Tags) + ")"
		}
		f := scanners.At(a, r, line, msg)
		f.Evidence = red
		f.Secret = secret
		if why, ok := suppress.SecretAllowed(g.Line, near.lines(g.StartLine-1, 0)); ok {
			f.Suppressed = why
		}
		out = append(out, f)
	}
	return out
}

// atSecretLine moves a finding whose match spans lines to the line of its
// secret: a .netrc entry written over three lines (machine, login,
// password) is reported at the password, where an inline marker for it
// sits, not at "machine". Line keeps every line of the match.
func atSecretLine(g *engine.Finding) {
	if g.EndLine <= g.StartLine || g.Secret == "" {
		return
	}
	if i := strings.Index(g.Match, g.Secret); i > 0 {
		g.StartLine += strings.Count(g.Match[:i], "\n")
	}
}

func readerOf(a *scanners.Artifact) string {
	switch {
	case a.Kind == scanners.ArtifactImageConfig || a.TargetKind == scanners.KindImage:
		return "image"
	case a.Kind == scanners.ArtifactPatch || a.Commit != "":
		return "repository's history"
	}
	return "file"
}

func hasTag(tags []string, prefix string) bool {
	for _, t := range tags {
		if strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return false
}

func decodedTag(tags []string) string {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, "decoded:"); ok {
			return v
		}
	}
	return ""
}

// dedupe keeps one finding per line and secret, the most specific rule's,
// drops generic findings on a line that a specific rule already reports
// (gitleaks itself only drops a generic finding whose secret another rule's
// secret contains), and drops a finding made after decoding where the same
// rule found the credential on that line as written.
func dedupe(gfs []engine.Finding) []engine.Finding {
	if len(gfs) < 2 {
		return gfs
	}
	specificLine := map[int]bool{}
	type ruleLine struct {
		rule string
		line int
	}
	plain := map[ruleLine]bool{}
	for _, g := range gfs {
		if specificity(g.RuleID) > 0 {
			specificLine[g.StartLine] = true
		}
		if !hasTag(g.Tags, "decoded:") {
			plain[ruleLine{g.RuleID, g.StartLine}] = true
		}
	}
	type key struct {
		line   int
		secret string
	}
	best := map[key]int{}
	var out []engine.Finding
	for _, g := range gfs {
		if specificity(g.RuleID) == 0 && specificLine[g.StartLine] {
			continue
		}
		if hasTag(g.Tags, "decoded:") && plain[ruleLine{g.RuleID, g.StartLine}] {
			continue // the same credential, found again after decoding (a percent-encoded SAS)
		}
		k := key{g.StartLine, g.Secret}
		i, seen := best[k]
		if !seen {
			best[k] = len(out)
			out = append(out, g)
			continue
		}
		if sp, cur := specificity(g.RuleID), specificity(out[i].RuleID); sp > cur || (sp == cur && g.RuleID < out[i].RuleID) {
			out[i] = g
		}
	}
	return out
}

// identifierRe matches names in code that generic rules take for values
// after a key-like word: snake_case and SCREAMING_CASE words, camelCase and
// PascalCase words, and dotted attribute paths of those — letters only, so
// that no digit-bearing token is ever dropped.
var identifierRe = lazyregexp.New(`^(?:[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)+|[a-z]+(?:[A-Z][a-z]+)+|(?:[A-Z][a-z]+){2,}|[A-Za-z_]+(?:\.[A-Za-z_]+)+)$`)

// codeExts are programming languages, where an unquoted name is a
// reference to a variable (in .env, YAML or shell, it is the value itself).
var codeExts = map[string]bool{
	".py": true, ".pyi": true, ".ipynb": true, ".js": true, ".mjs": true, ".ts": true, ".tsx": true, ".jsx": true,
	".go": true, ".java": true, ".kt": true, ".scala": true, ".rs": true, ".c": true, ".cc": true, ".cpp": true,
	".h": true, ".hpp": true, ".cu": true, ".cuh": true, ".cs": true, ".rb": true, ".php": true, ".swift": true,
	".jl": true, ".r": true, ".lua": true,
}

// codeReference reports whether a generic rule's secret is a name in source
// code — src_key_padding_mask=src_key_padding_mask, tokenizer.eos_token —
// which gitleaks' entropy threshold lets through in ML code full of "key"
// and "token": letters only, unquoted on its line, in a programming
// language's file. A quoted string, or a value in .env, YAML or a script,
// is always kept.
func codeReference(p, line, secret string) bool {
	if !codeExts[strings.ToLower(path.Ext(scanners.Base(p)))] {
		return false
	}
	// The generic rule's value may run on over '=' (a, b=b: "b=b", or
	// serialized_options=b'…': "serialized_options=b"): every part a name,
	// one of them an identifier of several words.
	named := false
	for _, part := range strings.Split(secret, "=") {
		switch {
		case identifierRe.MatchString(part):
			named = true
		case part == "" || strings.Trim(part, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") != "":
			return false
		}
	}
	if !named {
		return false
	}
	for _, q := range []string{`"`, `'`, "`"} {
		if strings.Contains(line, q+secret+q) {
			return false
		}
	}
	return true
}

// digestRe is a hex digest of a common length: MD5, SHA-1, SHA-256, SHA-512.
var digestRe = lazyregexp.New(`^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64}|[0-9a-fA-F]{128})$`)

// namedDigest reports whether a generic rule's secret is a hex digest on a
// line that says it is one ("key_sha256": "…", checksum = …): test vectors
// and lock files, not credentials. A bare 32-hex value stays reported:
// many services issue keys of that shape.
func namedDigest(line, secret string) bool {
	if !digestRe.MatchString(strings.TrimSpace(secret)) {
		return false
	}
	l := strings.ToLower(line)
	for _, w := range []string{"sha1", "sha224", "sha256", "sha384", "sha512", "sha-", "md5", "hash", "digest", "checksum", "blake2"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// specificity ranks rules: generic ones lowest, rules that match a container
// of any credential (a PEM block, a URL, a .netrc entry) next, vendor token
// rules highest.
func specificity(id string) int {
	switch {
	case strings.Contains(id, "generic"):
		return 0
	case id == "private-key" || id == "url-credentials" || id == "netrc-password" ||
		strings.HasPrefix(id, "jwt") || strings.HasPrefix(id, "curl-"):
		return 1
	}
	return 2
}

var (
	_ scanners.Scanner      = (*Scanner)(nil)
	_ scanners.BytesScanner = (*Scanner)(nil).ScanBytes
	_ scanners.RuleLookup   = (*Scanner)(nil)
)

// GitleaksRuleID returns the gitleaks rule id behind one of the check's
// rule IDs ("secrets/huggingface-token" → "huggingface-access-token").
func (s *Scanner) GitleaksRuleID(ruleID string) (string, bool) {
	id, ok := s.described().gitleaksID[ruleID]
	return id, ok
}
