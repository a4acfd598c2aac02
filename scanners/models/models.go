// Package models is the models check: it finds model files that run code
// when loaded (pickles and the containers that hold them, Keras Lambda layers,
// TensorFlow graphs with Python or file ops, GGUF chat templates reaching
// Python internals, ONNX external data escaping the model directory) and model
// files that are malformed. Formats are recognised by content, never by the
// file name alone. It never executes, imports or unpickles what it reads.
package models

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/license"
)

// Scanner is the models check. It is safe for concurrent use.
type Scanner struct {
	strings  scanners.BytesScanner
	cls      *classifier
	rulesErr error
	lim      Limits

	// licMu guards lic: each target's licence facts until FinishTarget
	// (license.go).
	licMu sync.Mutex
	lic   map[string]*licState
}

// Limits bound the work done on one artifact.
type Limits struct {
	// MaxDepth is how deep archives nest (default 4).
	MaxDepth int
	// MaxExpand is the most bytes decompressed from one artifact, all
	// members together (default 8 GiB).
	MaxExpand int64
	// MaxMembers is the most archive members looked at in one artifact
	// (default 100000).
	MaxMembers int
	// MaxInMemory is the largest decompressed member held in memory; larger
	// ones that need random access are spooled to an anonymous temporary
	// file (default 32 MiB).
	MaxInMemory int64
	// MaxDict is the largest LZMA/LZMA2/zstd dictionary (window) a
	// decompressor may allocate (default 128 MiB; xz -9 and 7-Zip -mx9 use
	// 64 MiB). A stream that needs more is not decompressed.
	MaxDict int64
	// MaxHeader bounds an archive header read whole: a 7z header, a
	// safetensors header (default 64 MiB).
	MaxHeader int64
	// MaxEntries bounds the entries of one header: safetensors tensors, 7z
	// folders (default 1<<18; the largest models have tens of thousands of
	// tensors per file).
	MaxEntries int
	// MaxSearch is the most bytes of one file searched where the format
	// cannot be parsed (HDF5), or walked as protobuf fields (default 8 GiB).
	MaxSearch int64
}

// Reaching a limit is never a clean pass: the part not scanned is a high
// models/unscannable finding, and Scan returns an error wrapping
// scanners.ErrIncomplete, so that the run exits 2.

// Option configures a Scanner.
type Option func(*Scanner)

// WithStrings hands strings found inside models (pickle string constants,
// safetensors metadata, GGUF key/values, Keras configs) to bs, typically the
// secrets check, so that a token pickled into training arguments is found.
func WithStrings(bs scanners.BytesScanner) Option {
	return func(s *Scanner) { s.strings = bs }
}

// WithRulesFS reads the pickle globals table (rules.PickleFile) from fsys
// instead of the built-in one (a user rules directory: os.DirFS(dir)).
func WithRulesFS(fsys fs.FS) Option {
	return func(s *Scanner) {
		r, err := rules.LoadPickle(fsys)
		if err != nil {
			s.rulesErr = err
			return
		}
		s.cls, s.rulesErr = newClassifier(r), nil
	}
}

// WithPickleRules uses r as the pickle globals table.
func WithPickleRules(r *rules.PickleRules) Option {
	return func(s *Scanner) { s.cls, s.rulesErr = newClassifier(r), nil }
}

// WithLimits overrides the default limits (zero fields keep their default).
func WithLimits(l Limits) Option {
	return func(s *Scanner) {
		if l.MaxDepth > 0 {
			s.lim.MaxDepth = l.MaxDepth
		}
		if l.MaxExpand > 0 {
			s.lim.MaxExpand = l.MaxExpand
		}
		if l.MaxMembers > 0 {
			s.lim.MaxMembers = l.MaxMembers
		}
		if l.MaxInMemory > 0 {
			s.lim.MaxInMemory = l.MaxInMemory
		}
		if l.MaxDict > 0 {
			s.lim.MaxDict = l.MaxDict
		}
		if l.MaxHeader > 0 {
			s.lim.MaxHeader = l.MaxHeader
		}
		if l.MaxEntries > 0 {
			s.lim.MaxEntries = l.MaxEntries
		}
		if l.MaxSearch > 0 {
			s.lim.MaxSearch = l.MaxSearch
		}
	}
}

// builtinPickle reads the built-in pickle table once per process, when a
// model file is first scanned: a run that meets none (the per-job sbatch
// hook, whose secrets check brings the models parsers along for strings)
// does not parse its YAML.
var builtinPickle = sync.OnceValues(func() (*rules.PickleRules, error) {
	return rules.LoadPickle(rules.PickleFS())
})

// DefaultLimits are the limits New starts from.
func DefaultLimits() Limits {
	return Limits{MaxDepth: 4, MaxExpand: 8 << 30, MaxMembers: 100000, MaxInMemory: 32 << 20,
		MaxDict: 128 << 20, MaxHeader: 64 << 20, MaxEntries: 1 << 18, MaxSearch: 8 << 30}
}

// New returns the models check with the built-in pickle rules.
func New(opts ...Option) *Scanner {
	s := &Scanner{lim: DefaultLimits(), cls: lazyClassifier(builtinPickle)}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	return s
}

// Check returns "models".
func (s *Scanner) Check() string { return scanners.CheckModels }

// Rules lists every rule the models check can report.
func (s *Scanner) Rules() []scanners.Rule { return append([]scanners.Rule(nil), allRules...) }

// Wants reports whether the first bytes look like a model file or an
// archive that may hold one.
func (s *Scanner) Wants(a *scanners.Artifact, head []byte) bool {
	if a.Kind != "" && a.Kind != scanners.ArtifactFile {
		return false
	}
	return sniff(head, a.Size, a.Path) != fmtUnknown || modelName(a.Path) || wantsLicense(a, head)
}

// Prefix says how much of a the check reads, for the formats it reads only
// the start of: a safetensors file up to the end of its header (the header
// length its first 8 bytes give, as sc.safetensors reads it; 8 bytes when
// that length is out of bounds). The dispatcher then keeps that much of a
// weights file streamed from an image layer and does not spool the rest.
func (s *Scanner) Prefix(a *scanners.Artifact, head []byte) (int64, bool) {
	if licenseFile(a) && sniff(head, a.Size, a.Path) == fmtUnknown {
		switch {
		case markerFile(a.Path):
			return 0, true
		case cardFile(a.Path):
			return license.MaxCardHead, true
		}
	}
	if a.Size < 0 || len(head) < 8 || sniff(head, a.Size, a.Path) != fmtSafetensors {
		return 0, false
	}
	n := binary.LittleEndian.Uint64(head)
	if n > 100<<20 {
		return 8, true
	}
	return 8 + int64(n), true
}

// modelExts are names that promise a model format. A file so named whose
// content is in no known format is reported (fail closed), unless it is a
// Git LFS pointer.
var modelExts = map[string]bool{
	".pkl": true, ".pickle": true, ".pt": true, ".pth": true, ".ckpt": true, ".joblib": true,
	".npy": true, ".npz": true, ".safetensors": true, ".gguf": true, ".onnx": true, ".h5": true,
	".hdf5": true, ".keras": true, ".dill": true,
}

// sitePathFile reports whether a .pth file that is no checkpoint is text:
// a Python path configuration file (site-packages/*.pth: paths and import
// lines run at interpreter start), which shares PyTorch's extension.
func sitePathFile(p string, head []byte) bool {
	if !strings.EqualFold(path.Ext(p), ".pth") || scanners.IsBinary(head) {
		return false
	}
	// The head may end inside a multi-byte character.
	for i := 0; i < utf8.UTFMax-1 && len(head) > 0 && !utf8.Valid(head); i++ {
		head = head[:len(head)-1]
	}
	return utf8.Valid(head)
}

// lfsPointer starts a Git LFS pointer file (the model itself is elsewhere).
const lfsPointer = "version https://git-lfs.github.com/spec/"

func modelName(p string) bool {
	return modelExts[strings.ToLower(path.Ext(p))]
}

// Scan examines one model file.
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	if s.rulesErr != nil {
		return nil, fmt.Errorf("models check: %w", s.rulesErr)
	}
	if err := s.cls.ready(); err != nil {
		return nil, fmt.Errorf("models check: %w", err)
	}
	if licenseFile(a) && !modelName(a.Path) {
		head := make([]byte, min(c.Size(), scanners.HeadSize))
		n, _ := c.ReadAt(head, 0)
		if sniff(head[:n], a.Size, a.Path) == fmtUnknown {
			return s.scanLicenseFile(ctx, a, c)
		}
	}
	sc := &scan{s: s, ctx: ctx, a: a, budget: s.lim.MaxExpand}
	if !sc.content(place{}, c, c.Size(), a.Path, 0) && modelName(a.Path) && sc.readErr == nil {
		head := make([]byte, scanners.HeadSize)
		n, _ := c.ReadAt(head, 0)
		if !bytes.HasPrefix(head[:n], []byte(lfsPointer)) && n > 0 && !sitePathFile(a.Path, head[:n]) {
			sc.add(ruleUnscannable, scanners.SeverityMedium,
				fmt.Sprintf("The file is named like a model (%s) but its content is in no model format mlwarden knows, so it was not analysed; a loader may still read it. %s", path.Ext(a.Path), ruleUnscannable.Fix),
				"unknown content in "+path.Ext(a.Path)+" file")
		}
	}
	sc.summarize()
	if err := ctx.Err(); err != nil {
		return sc.out, err
	}
	if sc.readErr != nil {
		return sc.out, sc.readErr
	}
	return sc.out, sc.incomplete()
}

// place says where inside an artifact something is: the chain of archive
// members (and compressed streams) that lead to it.
type place []string

func (p place) child(name string) place {
	q := make(place, len(p), len(p)+1)
	copy(q, p)
	return append(q, name)
}

// in returns " in member a → b" or "".
func (p place) in() string {
	if len(p) == 0 {
		return ""
	}
	return " in member " + strings.Join(p, " → ")
}

// at returns "offset 0x1a in member x" for evidence.
func (p place) at(off int64) string {
	return fmt.Sprintf("offset %d%s", off, p.in())
}

// scan is the state of one Scan call.
type scan struct {
	s       *Scanner
	ctx     context.Context
	a       *scanners.Artifact
	out     []scanners.Finding
	budget  int64
	members int
	readErr error
	// limits names each limit reached, in order; limitAt is the index in
	// out of its finding, limitN how many more times it was reached.
	limits  []string
	limitAt map[string]int
	limitN  map[string]int
	// perRule counts findings by rule; dropped are the rules past maxPerRule.
	perRule map[string]int
	dropped map[string]scanners.Severity
	// nested counts the pickles walked inside bytes constants.
	nested int
	// inPayload is how deep the scan is inside payloads found in
	// constants (nestedPayload): a call there is hidden on purpose.
	inPayload int
}

// summarize adds one finding per rule that was past maxPerRule.
func (sc *scan) summarize() {
	ids := make([]string, 0, len(sc.dropped))
	for id := range sc.dropped {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := ruleByID(id)
		n := sc.perRule[id] - maxPerRule
		f := scanners.At(sc.a, r, 0, fmt.Sprintf("... and %d more %s findings in this file, not listed one by one. %s", n, id, r.Fix))
		f.Severity, f.Evidence = sc.dropped[id], fmt.Sprintf("%d more", n)
		sc.out = append(sc.out, f)
	}
}

func ruleByID(id string) scanners.Rule {
	for _, r := range allRules {
		if r.ID == id {
			return r
		}
	}
	return ruleUnscannable
}

// limit reports that a limit (kind: "depth limit", "member limit", …) left
// part of the artifact unscanned: one high models/unscannable finding per
// kind of limit, counting repeats, and an error at the end of Scan (exit 2).
func (sc *scan) limit(kind string, p place, msg string) {
	if _, ok := sc.limitAt[kind]; ok {
		sc.limitN[kind]++
		return
	}
	if sc.limitAt == nil {
		sc.limitAt, sc.limitN = map[string]int{}, map[string]int{}
	}
	sc.limitAt[kind] = len(sc.out)
	sc.add(ruleUnscannable, scanners.SeverityHigh, msg+" "+ruleUnscannable.Fix, kind+p.in())
	sc.limits = append(sc.limits, kind+p.in())
}

// incomplete finishes the limit findings and returns the error that makes
// the run exit 2, or nil when no limit was reached.
func (sc *scan) incomplete() error {
	if len(sc.limits) == 0 {
		return nil
	}
	for kind, n := range sc.limitN {
		if n > 0 {
			f := &sc.out[sc.limitAt[kind]]
			f.Message += fmt.Sprintf(" (The same limit was reached %d more times in this file.)", n)
		}
	}
	return fmt.Errorf("%w: models: %s", scanners.ErrIncomplete, strings.Join(sc.limits, "; "))
}

// maxPerRule is how many findings of one rule one Scan makes; the rest
// are counted in one more (a 14 KB zip of shared members held 6,000
// duplicate-name findings).
const maxPerRule = 100

func (sc *scan) add(r scanners.Rule, sev scanners.Severity, msg, evidence string) {
	if sc.perRule == nil {
		sc.perRule = map[string]int{}
	}
	sc.perRule[r.ID]++
	if sc.perRule[r.ID] > maxPerRule {
		if sc.dropped == nil {
			sc.dropped = map[string]scanners.Severity{}
		}
		sc.dropped[r.ID] = max(sc.dropped[r.ID], sev)
		return
	}
	f := scanners.At(sc.a, r, 0, msg)
	f.Severity = sev
	f.Evidence = evidence
	sc.out = append(sc.out, f)
}

// strings hands strings found in a model to the BytesScanner.
func (sc *scan) strings(p place, what string, data []byte) {
	if sc.s.strings == nil || len(data) == 0 {
		return
	}
	b := *sc.a
	note := what + p.in()
	if b.Note != "" {
		note = b.Note + "; " + note
	}
	b.Note = note
	sc.out = append(sc.out, sc.s.strings(sc.ctx, &b, data)...)
}
