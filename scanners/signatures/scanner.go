package signatures

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
)

// Scanner is the signatures check. It is safe for concurrent use.
type Scanner struct {
	policy   Policy
	lp       *loadedPolicy
	remote   []remote.Option
	nameOpts []name.Option
	verify   func(ctx context.Context, ref string, o imagesig.Options) (*imagesig.Result, error)

	mu       sync.Mutex
	hashers  map[hasherKey]*checksums.Hasher          // by the target's file system
	done     map[string]bool                          // once-per-run checks (images)
	pending  map[string][]pending                     // by target name, until FinishTarget
	modelDir map[string]map[string]*scanners.Artifact // target → directory → a model file in it, until FinishTarget
}

// hasherKey names the file system of a target: the Artifact's FS itself,
// or, for a file system that cannot be a map key, the target's name.
type hasherKey struct {
	fsys   fs.FS
	target string
}

// pending is a manifest or signature to verify once its target is walked:
// what kind, the artifact (with its FS) and its content (for a detached
// signature, the signature's text). It is data, not a closure, so that a
// cache can keep it (keep.go).
type pending struct {
	kind string
	a    scanners.Artifact
	data []byte
}

// Kinds of pending judgements.
const (
	judgeManifest = "manifest"
	judgeModelSig = "model-sig"
	judgeBundle   = "bundle"
	judgeDetached = "detached"
)

// Option configures a Scanner.
type Option func(*Scanner) error

// WithPolicy sets which images and models must be signed, and by whom. Its
// key, certificate and trusted-root files are read by New.
func WithPolicy(p Policy) Option {
	return func(s *Scanner) error { s.policy = p; return nil }
}

// WithRegistryOptions sets the registry client options used to fetch image
// signatures (auth, transport).
func WithRegistryOptions(o ...remote.Option) Option {
	return func(s *Scanner) error { s.remote = append(s.remote, o...); return nil }
}

// WithNameOptions sets how image references are parsed (name.Insecure for
// plain-HTTP registries).
func WithNameOptions(o ...name.Option) Option {
	return func(s *Scanner) error { s.nameOpts = append(s.nameOpts, o...); return nil }
}

// New returns the signatures check.
func New(opts ...Option) (*Scanner, error) {
	s := &Scanner{hashers: map[hasherKey]*checksums.Hasher{}, done: map[string]bool{}, pending: map[string][]pending{}, modelDir: map[string]map[string]*scanners.Artifact{}, verify: imagesig.Verify}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	lp, err := s.policy.load()
	if err != nil {
		return nil, fmt.Errorf("signatures policy: %w", err)
	}
	s.lp = lp
	return s, nil
}

// Close forgets the digests the scanner memoized. The file systems it read
// through belong to the sources, which close them.
func (s *Scanner) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hashers = map[hasherKey]*checksums.Hasher{}
	return nil
}

// Check returns "signatures".
func (s *Scanner) Check() string { return scanners.CheckSignatures }

// maxManifest bounds a manifest or signature read into memory.
const maxManifest = 64 << 20

// modelExts are file extensions of model weights.
var modelExts = []string{".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ggml", ".onnx", ".h5", ".ckpt",
	".pkl", ".pickle", ".joblib", ".msgpack", ".tflite", ".keras", ".npz", ".mlmodel", ".nemo", ".engine", ".plan"}

func isModelFile(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return slices.Contains(modelExts, ext)
}

func (s *Scanner) sigNames(dir string) []string {
	names := []string{modelsig.DefaultSignatureName}
	if mp := s.lp.model(dir); mp != nil && mp.Signature != "" {
		names = append(names, mp.Signature)
	}
	return names
}

// Wants picks manifests, model signatures, blob signatures (FILE.sigstore.json,
// FILE.sig), image configs (when the policy names images), possible LFS
// pointers and model files (for the unsigned check; their content is not
// read).
func (s *Scanner) Wants(a *scanners.Artifact, head []byte) bool {
	switch a.Kind {
	case scanners.ArtifactImageConfig:
		return len(s.lp.images) > 0 && a.TargetKind == scanners.KindImage
	case scanners.ArtifactFile:
	default:
		return false
	}
	base := path.Base(a.Path)
	switch {
	case checksums.IsManifestName(base) && a.Size <= maxManifest:
		return true
	case slices.Contains(s.sigNames(path.Dir(a.Path)), base) && a.Size <= maxManifest:
		return true
	case strings.HasSuffix(base, bundleSuffix) && len(base) > len(bundleSuffix) && a.Size <= maxManifest && local(a):
		return true
	case strings.HasSuffix(base, detachedSuffix) && len(base) > len(detachedSuffix) && a.Size <= maxDetached && local(a):
		return true
	case a.Size < checksums.LFSPointerMax && strings.HasPrefix(string(head), "version ") && a.TargetKind != scanners.KindRepo:
		return true
	case local(a) && isModelFile(base):
		return true
	}
	return false
}

// Rides asks for the small files of directory and file targets that other
// checks scan: their digest is taken from the dispatcher's one read, in case
// a manifest names them. Files nobody else reads are hashed only when named.
func (s *Scanner) Rides(a *scanners.Artifact, head []byte) bool {
	return local(a) && a.Size <= scanners.SmallFile
}

// local reports whether a is a file of a directory or file target on the
// local disk, or of a Hub repository (read in ranges, its LFS files'
// digests known from its tree), whose other files the check can read
// through a.FS. Files of images and git history have no FS; a
// repository's working tree has one but is judged as git content is (its
// manifests are not followed).
func local(a *scanners.Artifact) bool {
	return a.Kind == scanners.ArtifactFile && a.FS != nil &&
		(a.TargetKind == scanners.KindDir || a.TargetKind == scanners.KindFile || a.TargetKind == scanners.KindHub)
}

// seed hashes a small file of a local target from the content the
// dispatcher holds in memory, so a manifest naming it costs no second read.
// It returns the digest it seeded (nil when it seeded none).
func (s *Scanner) seed(a *scanners.Artifact, c scanners.Content) (*keptSeed, error) {
	if !local(a) || a.Size > scanners.SmallFile || c.Size() > scanners.SmallFile {
		return nil, nil
	}
	h, _ := s.hasher(a)
	if h == nil {
		return nil, nil
	}
	d := sha256.New()
	n, err := io.Copy(d, io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		return nil, fmt.Errorf("hash %s: %w", a.Path, err)
	}
	k := &keptSeed{Digest: hex.EncodeToString(d.Sum(nil)), Size: n}
	h.Seed(a.Path, "sha256", k.Digest, k.Size)
	return k, nil
}

// later judges a's manifest or signature (kind, data) when a's target has
// been walked, if the target is local, and notes it in k for a cache;
// otherwise at once (manifests inside images and git history are reported
// as unverified without reading other files).
func (s *Scanner) later(ctx context.Context, a *scanners.Artifact, kind string, data []byte, k *keptState) ([]scanners.Finding, error) {
	p := pending{kind: kind, a: *a, data: data}
	if !local(a) {
		return s.judge(ctx, &p)
	}
	s.pend(p)
	k.Judge = &keptJudgement{Kind: kind, Data: data}
	return nil, nil
}

func (s *Scanner) pend(p pending) {
	s.mu.Lock()
	s.pending[p.a.Target] = append(s.pending[p.a.Target], p)
	s.mu.Unlock()
}

// judge verifies one manifest or signature.
func (s *Scanner) judge(ctx context.Context, p *pending) ([]scanners.Finding, error) {
	a := &p.a
	switch p.kind {
	case judgeManifest:
		h, dir := s.hasher(a)
		if h == nil {
			return nil, nil
		}
		entries, _ := checksums.Parse(a.Path, p.data, checksums.AlgorithmFor(a.Path))
		var out []scanners.Finding
		for _, r := range h.Verify(ctx, dir, entries) {
			out = append(out, manifestFinding(a, r)...)
		}
		return out, ctx.Err()
	case judgeModelSig:
		return s.scanModelSig(ctx, a, p.data), nil
	case judgeBundle:
		return s.scanBlobBundle(ctx, a, p.data)
	case judgeDetached:
		return s.scanDetached(ctx, a, p.data)
	}
	return nil, fmt.Errorf("%s: unknown judgement %q", a.Path, p.kind)
}

// prefetch starts hashing the large files a pending judgement will need.
func (s *Scanner) prefetch(ctx context.Context, p *pending) {
	switch p.kind {
	case judgeManifest:
		h, dir := s.hasher(&p.a)
		if h == nil {
			return
		}
		// Large files are never in the dispatcher's memory: start hashing
		// them now, while the walk goes on; small ones are hashed as they
		// are handed.
		entries, _ := checksums.Parse(p.a.Path, p.data, checksums.AlgorithmFor(p.a.Path))
		for _, e := range entries {
			if q, err := checksums.SafeJoin(dir, e.Name); err == nil {
				h.Prefetch(ctx, q, e.Algorithm, scanners.SmallFile)
			}
		}
	case judgeModelSig:
		s.prefetchModel(ctx, &p.a, p.data)
	case judgeBundle:
		s.prefetchSigned(ctx, &p.a, bundleSuffix)
	case judgeDetached:
		s.prefetchSigned(ctx, &p.a, detachedSuffix)
	}
}

// FinishTarget verifies the manifests and signatures of target t, now that
// the dispatcher has handed over (and this check has hashed) its small
// files, and reports its model directories that have neither. Large files
// they name are hashed in parallel, each once.
func (s *Scanner) FinishTarget(ctx context.Context, t scanners.Target) ([]scanners.Finding, error) {
	s.mu.Lock()
	ps := s.pending[t.Name]
	delete(s.pending, t.Name)
	dirs := s.modelDir[t.Name]
	delete(s.modelDir, t.Name)
	s.mu.Unlock()
	var (
		mu  sync.Mutex
		out []scanners.Finding
	)
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		out = append(out, s.scanUnsigned(dirs[d])...)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range ps {
		g.Go(func() error {
			fs, err := s.judge(gctx, &ps[i])
			mu.Lock()
			out = append(out, fs...)
			mu.Unlock()
			return err
		})
	}
	return out, g.Wait()
}

// Scan verifies one artifact. What it keeps of the artifact for
// FinishTarget (the digest it seeded, a manifest or signature to verify, a
// model directory to judge) it also hands to scanners.KeepState, so that a
// cache that replays the artifact's findings hands it back (keep.go).
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	if a.Kind == scanners.ArtifactImageConfig {
		return s.scanImage(ctx, a)
	}
	var k keptState
	defer s.keep(ctx, a, &k)
	var err error
	if k.Seed, err = s.seed(a, c); err != nil {
		return nil, err
	}
	base := path.Base(a.Path)
	var out []scanners.Finding
	lfs, isPointer, err := lfsPointer(a, c)
	if err != nil {
		return nil, err
	}
	if isPointer {
		out = append(out, lfs)
		if isModelFile(base) {
			k.ModelDir = s.noteModelDir(a)
		}
		return out, nil
	}
	switch {
	case checksums.IsManifestName(base):
		data, _, err := scanners.ReadAll(c, maxManifest)
		if err != nil {
			return nil, err
		}
		found, err := s.scanManifest(ctx, a, data, &k)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	case slices.Contains(s.sigNames(path.Dir(a.Path)), base):
		data, _, err := scanners.ReadAll(c, maxManifest)
		if err != nil {
			return nil, err
		}
		s.prefetchModel(ctx, a, data)
		found, _ := s.later(ctx, a, judgeModelSig, data, &k)
		out = append(out, found...)
	case strings.HasSuffix(base, bundleSuffix):
		data, _, err := scanners.ReadAll(c, maxManifest)
		if err != nil {
			return nil, err
		}
		s.prefetchSigned(ctx, a, bundleSuffix)
		found, err := s.later(ctx, a, judgeBundle, data, &k)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	case strings.HasSuffix(base, detachedSuffix) && local(a):
		data, _, err := scanners.ReadAll(c, maxDetached)
		if err != nil {
			return nil, err
		}
		sig, ok := detachedSignature(data)
		if !ok {
			break // an OpenPGP or other binary signature: not cosign's
		}
		s.prefetchSigned(ctx, a, detachedSuffix)
		found, err := s.later(ctx, a, judgeDetached, sig, &k)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	if isModelFile(base) {
		k.ModelDir = s.noteModelDir(a)
	}
	return out, nil
}

// hasher returns the memoizing hasher over the target's file system
// (a.FS, never reopened from a.Target, which is only the report's name) and
// the artifact's directory inside it; nil when a is not a file of a local
// directory or file target.
func (s *Scanner) hasher(a *scanners.Artifact) (h *checksums.Hasher, dir string) {
	if !local(a) {
		return nil, ""
	}
	dir = path.Dir(a.Path)
	if a.TargetKind == scanners.KindFile {
		dir = "." // a file target's FS is its directory; Path is its name
	}
	fsys := a.FS
	if v, ok := fsys.(interface{ Unwrap() fs.FS }); ok {
		// A view of the target's file system for one artifact (the Hub
		// source's, which notes reads of neighbours while a file is
		// scanned, since its result is then no longer the file's alone):
		// the digests are the target's. What this check reads of
		// neighbours while it scans never changes an artifact's findings
		// (judgements wait for FinishTarget), so it reads past the view.
		fsys = v.Unwrap()
	}
	k := hasherKey{fsys: fsys}
	if !reflect.TypeOf(fsys).Comparable() {
		k = hasherKey{target: a.Target}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.hashers[k]; h != nil {
		return h, dir
	}
	h = checksums.NewHasher(fsys)
	s.hashers[k] = h
	return h, dir
}

// fileFinding locates a finding at another file of the same target.
func (s *Scanner) fileFinding(a *scanners.Artifact, r scanners.Rule, p, msg string) scanners.Finding {
	b := *a
	b.Path, b.Lines = p, nil
	return scanners.At(&b, r, 0, msg)
}
