// Package signatures is the signatures check: checksum manifests
// (SHA256SUMS, *.sha256), git-LFS pointers left where weights should be,
// OpenSSF model signatures (model.sig), what cosign sign-blob writes beside a
// file (FILE.sigstore.json, FILE.sig + FILE.pem) and cosign image
// signatures, all verified offline with trust taken from files (see Policy).
//
// A scanner sees one artifact at a time, but manifests and model.sig
// describe other files of the target. When the target is a directory (or a
// file), the check reads a manifest, model.sig or blob signature when it
// sees it and verifies it when the whole target has been walked
// (FinishTarget), so that every file is read once per run:
//
//   - a small file (up to scanners.SmallFile) is read whole by the
//     dispatcher once for all checks; this check takes its sha256 from
//     that same copy while the walk goes on;
//   - a larger file (weights) is handed to the other checks in place and
//     read by them only where they parse it (a zip directory, a pickle);
//     this check streams it once, in parallel with other files, when a
//     manifest or signature names it, through an os.Root opened on the
//     target (the Artifact's Target is the path given on the command line).
//
// Names with "..", absolute names and symlinks that leave the target are
// findings and are never read. Each file is hashed at most once per
// algorithm and run, however many manifests name it (SHA256SUMS, a sidecar
// and model.sig share one memo per target). Inside images and git history,
// manifests cannot be followed and are reported as unverified.
package signatures

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures/blobsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// Scanner is the signatures check. It is safe for concurrent use.
type Scanner struct {
	policy   Policy
	lp       *loadedPolicy
	remote   []remote.Option
	nameOpts []name.Option
	verify   func(ctx context.Context, ref string, o imagesig.Options) (*imagesig.Result, error)

	mu      sync.Mutex
	roots   map[string]*checksums.Hasher // by target root
	done    map[string]bool              // once-per-run checks (unsigned dirs, images)
	pending map[string][]judgement       // by target name, until FinishTarget
	closed  bool
}

// judgement verifies one manifest or signature once its target is walked.
type judgement func(ctx context.Context) ([]scanners.Finding, error)

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
	s := &Scanner{roots: map[string]*checksums.Hasher{}, done: map[string]bool{}, pending: map[string][]judgement{}, verify: imagesig.Verify}
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

// Close releases the directories the scanner opened.
func (s *Scanner) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.roots {
		h.Root().Close()
	}
	s.roots, s.closed = map[string]*checksums.Hasher{}, true
	return nil
}

// Check returns "signatures".
func (s *Scanner) Check() string { return scanners.CheckSignatures }

const chk = scanners.CheckSignatures

// The check's rules.
var (
	RuleUnsigned = scanners.Rule{ID: "signatures/unsigned", Check: chk, Severity: scanners.SeverityHigh,
		Title: "Artifact is not signed",
		Why:   "Without a signature nothing shows that the image or model is the one its publisher built; a swapped or poisoned artifact runs unnoticed.",
		Fix:   "Sign it (cosign sign, model_signing sign) and verify with mlwarden verify; severity is high where the policy requires a signature, info elsewhere."}
	RuleInvalid = scanners.Rule{ID: "signatures/invalid", Check: chk, Severity: scanners.SeverityCritical,
		Title: "Signature does not verify",
		Why:   "A signature that does not verify means the artifact or its signature was altered, or the signature was copied from another artifact.",
		Fix:   "Do not use the artifact; fetch it again from the publisher and re-verify, or re-sign it if you are the publisher."}
	RuleIdentity = scanners.Rule{ID: "signatures/identity-mismatch", Check: chk, Severity: scanners.SeverityCritical,
		Title: "Signed by an untrusted key or identity",
		Why:   "A valid signature by someone the policy does not trust proves nothing about provenance: anyone can sign.",
		Fix:   "Check who signed it; if the signer is legitimate add its key or identity to the policy, otherwise do not use the artifact."}
	RuleChecksum = scanners.Rule{ID: "signatures/checksum-mismatch", Check: chk, Severity: scanners.SeverityCritical,
		Title: "File differs from its signed or published digest",
		Why:   "The file's content is not what the manifest or signature says: corrupted, truncated or tampered with.",
		Fix:   "Download the file again and verify it; never load weights whose digest does not match."}
	RuleNotSigned = scanners.Rule{ID: "signatures/file-not-signed", Check: chk, Severity: scanners.SeverityHigh,
		Title: "File in a signed model is not covered by the signature",
		Why:   "A file added next to signed weights (a pickle, a config, custom code) is loaded with them but nobody vouched for it.",
		Fix:   "Remove the file, or re-sign the model with it; use ignorePaths only for files that are never loaded."}
	RuleMissing = scanners.Rule{ID: "signatures/file-missing", Check: chk, Severity: scanners.SeverityMedium,
		Title: "Signed or listed file is missing",
		Why:   "The model or release is incomplete: a file the signature or manifest lists is not there.",
		Fix:   "Fetch the missing file from the publisher and verify again."}
	RuleLFSPointer = scanners.Rule{ID: "signatures/lfs-pointer-only", Check: chk, Severity: scanners.SeverityMedium,
		Title: "git-LFS pointer where the file should be",
		Why:   "The content was never fetched: a loader reads a 130-byte text file instead of weights, fails, or falls back to another source.",
		Fix:   "Run git lfs pull (or download the file) and check it against the pointer's sha256 oid and size."}
	RuleUnsafePath = scanners.Rule{ID: "signatures/unsafe-path", Check: chk, Severity: scanners.SeverityHigh,
		Title: "Manifest names a file outside its directory",
		Why:   "A manifest entry with '..', an absolute path or a symlink out of the directory makes naive verifiers (sha256sum -c) read or vouch for files elsewhere.",
		Fix:   "Regenerate the manifest from inside the directory with relative names; mlwarden never follows such entries."}
	RuleUnverified = scanners.Rule{ID: "signatures/unverified", Check: chk, Severity: scanners.SeverityInfo,
		Title: "Signature or manifest present but not verified",
		Why:   "The artifact carries a signature or manifest that could not be checked here (no trusted key configured, or it lives inside an image or git history).",
		Fix:   "Add the signer's key or identity under signatures: in .mlwarden.yaml, or run mlwarden verify on the extracted files."}
	RuleMalformed = scanners.Rule{ID: "signatures/manifest-malformed", Check: chk, Severity: scanners.SeverityLow,
		Title: "Checksum manifest line could not be read",
		Why:   "A line that does not parse is silently skipped by sha256sum -c; the file it meant is not verified.",
		Fix:   "Regenerate the manifest with sha256sum (or sha256sum --tag)."}
)

// Rules lists the check's rules.
func (s *Scanner) Rules() []scanners.Rule {
	return []scanners.Rule{RuleUnsigned, RuleInvalid, RuleIdentity, RuleChecksum, RuleNotSigned, RuleMissing,
		RuleLFSPointer, RuleUnsafePath, RuleUnverified, RuleMalformed}
}

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
	case strings.HasSuffix(base, bundleSuffix) && len(base) > len(bundleSuffix) && a.Size <= maxManifest &&
		(a.TargetKind == scanners.KindDir || a.TargetKind == scanners.KindFile):
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

// local reports whether a is a file of a target on the local file system,
// whose other files the check can read through a root.
func local(a *scanners.Artifact) bool {
	return a.Kind == scanners.ArtifactFile && (a.TargetKind == scanners.KindDir || a.TargetKind == scanners.KindFile)
}

// seed hashes a small file of a local target from the content the
// dispatcher holds in memory, so a manifest naming it costs no second read.
func (s *Scanner) seed(a *scanners.Artifact, c scanners.Content) error {
	if !local(a) || a.Size > scanners.SmallFile || c.Size() > scanners.SmallFile {
		return nil
	}
	h, _, err := s.hasher(a)
	if err != nil || h == nil {
		return err
	}
	d := sha256.New()
	n, err := io.Copy(d, io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		return fmt.Errorf("hash %s: %w", a.Path, err)
	}
	h.Seed(a.Path, "sha256", hex.EncodeToString(d.Sum(nil)), n)
	return nil
}

// later runs j when a's target has been walked, if the target is local;
// otherwise at once (manifests inside images and git history are reported
// as unverified without reading other files).
func (s *Scanner) later(ctx context.Context, a *scanners.Artifact, j judgement) ([]scanners.Finding, error) {
	if !local(a) {
		return j(ctx)
	}
	s.mu.Lock()
	s.pending[a.Target] = append(s.pending[a.Target], j)
	s.mu.Unlock()
	return nil, nil
}

// FinishTarget verifies the manifests and signatures of target t, now that
// the dispatcher has handed over (and this check has hashed) its small
// files. Large files they name are hashed in parallel, each once.
func (s *Scanner) FinishTarget(ctx context.Context, t scanners.Target) ([]scanners.Finding, error) {
	s.mu.Lock()
	js := s.pending[t.Name]
	delete(s.pending, t.Name)
	s.mu.Unlock()
	var (
		mu  sync.Mutex
		out []scanners.Finding
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, j := range js {
		g.Go(func() error {
			fs, err := j(gctx)
			mu.Lock()
			out = append(out, fs...)
			mu.Unlock()
			return err
		})
	}
	return out, g.Wait()
}

// Scan verifies one artifact.
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	if a.Kind == scanners.ArtifactImageConfig {
		return s.scanImage(ctx, a)
	}
	if err := s.seed(a, c); err != nil {
		return nil, err
	}
	base := path.Base(a.Path)
	var out []scanners.Finding
	if a.Size < checksums.LFSPointerMax {
		data, _, err := scanners.ReadAll(c, checksums.LFSPointerMax)
		if err != nil {
			return nil, err
		}
		if p, ok := checksums.ParseLFSPointer(data); ok {
			out = append(out, scanners.At(a, RuleLFSPointer, 0, fmt.Sprintf(
				"%s is a git-LFS pointer, not the file: the content (sha256 %s, %d bytes) was never fetched; run git lfs pull or download it, then verify it against that digest",
				a.Path, p.OID, p.Size)))
			if isModelFile(base) {
				out = append(out, s.scanUnsigned(a)...)
			}
			return out, nil
		}
	}
	switch {
	case checksums.IsManifestName(base):
		data, _, err := scanners.ReadAll(c, maxManifest)
		if err != nil {
			return nil, err
		}
		found, err := s.scanManifest(ctx, a, data)
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
		b := *a
		found, _ := s.later(ctx, a, func(ctx context.Context) ([]scanners.Finding, error) {
			return s.scanModelSig(ctx, &b, data), nil
		})
		out = append(out, found...)
	case strings.HasSuffix(base, bundleSuffix):
		data, _, err := scanners.ReadAll(c, maxManifest)
		if err != nil {
			return nil, err
		}
		s.prefetchSigned(ctx, a, bundleSuffix)
		b := *a
		found, err := s.later(ctx, a, func(ctx context.Context) ([]scanners.Finding, error) {
			return s.scanBlobBundle(ctx, &b, data)
		})
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
		b := *a
		found, err := s.later(ctx, a, func(ctx context.Context) ([]scanners.Finding, error) {
			return s.scanDetached(ctx, &b, sig)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	if isModelFile(base) {
		out = append(out, s.scanUnsigned(a)...)
	}
	return out, nil
}

// hasher returns the memoizing hasher over the target's root, and the
// artifact's directory inside it. ok is false when the target is not on
// the local file system.
func (s *Scanner) hasher(a *scanners.Artifact) (h *checksums.Hasher, dir string, err error) {
	var rootDir string
	switch a.TargetKind {
	case scanners.KindDir:
		rootDir, dir = a.Target, path.Dir(a.Path)
	case scanners.KindFile:
		rootDir, dir = filepath.Dir(a.Target), "."
	default:
		return nil, "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.roots[rootDir]; h != nil {
		return h, dir, nil
	}
	r, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, "", fmt.Errorf("open target root: %w", err)
	}
	h = checksums.NewHasher(r)
	s.roots[rootDir] = h
	return h, dir, nil
}

func (s *Scanner) scanManifest(ctx context.Context, a *scanners.Artifact, data []byte) ([]scanners.Finding, error) {
	entries, lineErrs := checksums.Parse(a.Path, data, checksums.AlgorithmFor(a.Path))
	if len(entries) == 0 {
		// Named like a manifest (x.sha512) but none of it is one: a
		// signature or test data, or a manifest beyond repair. Say so once.
		if len(lineErrs) > 0 {
			return []scanners.Finding{scanners.At(a, RuleMalformed, lineErrs[0].Line, fmt.Sprintf(
				"%s is named like a checksum manifest but none of its lines is a checksum entry (line %d: %s), so nothing is verified by it; if it is a manifest, regenerate it with sha256sum", a.Path, lineErrs[0].Line, lineErrs[0].Msg))}, nil
		}
		return nil, nil
	}
	var out []scanners.Finding
	for _, le := range lineErrs {
		out = append(out, scanners.At(a, RuleMalformed, le.Line, fmt.Sprintf(
			"checksum manifest %s line %d cannot be read (%s): the file it names is not verified; regenerate the manifest with sha256sum", a.Path, le.Line, le.Msg)))
	}
	h, dir, err := s.hasher(a)
	if err != nil {
		return nil, err
	}
	if h == nil {
		if len(entries) > 0 {
			out = append(out, scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
				"checksum manifest %s (%d entries) was not verified: it lives inside an image or git history, where mlwarden does not follow manifests; run mlwarden verify checksums on the extracted files", a.Path, len(entries))))
		}
		return out, nil
	}
	// Large files are never in the dispatcher's memory: start hashing them
	// now, while the walk goes on; small ones are hashed as they are handed.
	for _, e := range entries {
		if p, err := checksums.SafeJoin(dir, e.Name); err == nil {
			h.Prefetch(ctx, p, e.Algorithm, scanners.SmallFile)
		}
	}
	b := *a
	later, err := s.later(ctx, a, func(ctx context.Context) ([]scanners.Finding, error) {
		var out []scanners.Finding
		for _, r := range h.Verify(ctx, dir, entries) {
			out = append(out, manifestFinding(&b, r)...)
		}
		return out, ctx.Err()
	})
	return append(out, later...), err
}

func manifestFinding(a *scanners.Artifact, r checksums.Result) []scanners.Finding {
	where := fmt.Sprintf("%s (line %d of %s)", r.Name, r.Line, a.Path)
	switch r.Status {
	case checksums.OK:
		return nil
	case checksums.Mismatch:
		return []scanners.Finding{scanners.At(a, RuleChecksum, r.Line, fmt.Sprintf(
			"%s: %s; the file is corrupted or was changed after the manifest was written; download it again and do not load it until it matches", where, r.Reason))}
	case checksums.Missing:
		return []scanners.Finding{scanners.At(a, RuleMissing, r.Line, fmt.Sprintf(
			"%s is listed in the manifest but missing; the release is incomplete; fetch the file and verify again", where))}
	case checksums.Rejected:
		return []scanners.Finding{scanners.At(a, RuleUnsafePath, r.Line, fmt.Sprintf(
			"%s was not read: %s; a manifest may only name files beside or below it, so this entry vouches for nothing (sha256sum -c would follow it)", where, r.Reason))}
	}
	return []scanners.Finding{scanners.At(a, RuleUnverified, r.Line, fmt.Sprintf("%s could not be read to verify it: %s", where, r.Reason))}
}

// prefetchModel starts hashing the large files a model signature names
// (files serialization), as scanManifest does for manifests. The payload is
// not trusted here: it only picks files inside the target to read early.
func (s *Scanner) prefetchModel(ctx context.Context, a *scanners.Artifact, data []byte) {
	if !local(a) {
		return
	}
	h, dir, err := s.hasher(a)
	if err != nil || h == nil {
		return
	}
	sig, err := modelsig.ParseSignature(data)
	if err != nil {
		return
	}
	st, err := modelsig.ParseStatement(sig.PayloadType, sig.Payload)
	if err != nil || st.Serialization.Method != "files" {
		return
	}
	for _, r := range st.Resources {
		if p, err := checksums.SafeJoin(dir, r.Name); err == nil {
			h.Prefetch(ctx, p, st.Serialization.HashType, scanners.SmallFile)
		}
	}
}

// scanModelSig verifies model.sig against the policy's authorities, or,
// without a policy for this directory, checks the files against the signed
// manifest and reports the signature as unverified.
func (s *Scanner) scanModelSig(ctx context.Context, a *scanners.Artifact, data []byte) []scanners.Finding {
	sig, err := modelsig.ParseSignature(data)
	if err != nil {
		return []scanners.Finding{scanners.At(a, RuleInvalid, 0, fmt.Sprintf(
			"model signature %s cannot be read (%v); the model's integrity is unproven; re-sign it with model_signing", a.Path, err))}
	}
	h, root, err := s.hasher(a)
	if err != nil || h == nil {
		why := "it lives inside an image or git history"
		if err != nil {
			why = err.Error()
		}
		return []scanners.Finding{scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
			"model signature %s was not verified: %s; run mlwarden verify model on the extracted model", a.Path, why))}
	}
	dir := root
	mp := s.lp.model(dir)
	opts := modelsig.Options{SignatureName: path.Base(a.Path)}
	if mp != nil {
		opts.IgnorePaths, opts.IgnoreUnsignedFiles = mp.IgnorePaths, mp.IgnoreUnsignedFiles
	}
	var st *modelsig.Statement
	var signer string
	if mp == nil {
		// No trusted signer: check integrity only and say so.
		st, err = modelsig.ParseStatement(sig.PayloadType, sig.Payload)
		if sig.Method == modelsig.MethodSigstore && err != nil {
			st, err = nil, nil // the payload of a keyless bundle is read after verification
		}
		if err != nil {
			return []scanners.Finding{scanners.At(a, RuleInvalid, 0, fmt.Sprintf("model signature %s: %v; re-sign the model", a.Path, err))}
		}
	} else {
		var verr error
		for _, au := range mp.auth {
			t := modelsig.Trust{Chain: au.chain, TrustedMaterial: au.root}
			if k, ok := au.key.(*ecdsa.PublicKey); ok {
				t.Key = k
			}
			ids := au.identities
			if len(ids) == 0 {
				ids = []trust.Identity{{}} // key or chain authority
			}
			for _, id := range ids {
				t.Identity, t.IdentityRegexp, t.OIDCIssuer, t.OIDCIssuerRegexp = id.Subject, id.SubjectRegExp, id.Issuer, id.IssuerRegExp
				sig2, _ := modelsig.ParseSignature(data)
				st, signer, err = modelsig.VerifySignature(sig2, t)
				if err == nil {
					break
				}
				if verr == nil || errors.Is(err, trust.ErrInvalid) || errors.Is(err, trust.ErrUnsupported) {
					verr = err
				}
			}
			if st != nil {
				break
			}
		}
		if st == nil && errors.Is(verr, trust.ErrUnsupported) && !errors.Is(verr, trust.ErrInvalid) {
			// Not a verdict on the model, but not a pass either.
			f := scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
				"model signature %s for %s cannot be verified by mlwarden (%v), so the policy's signer requirement is not met; verify it with model_signing, or re-sign with an ECDSA key or certificate", a.Path, dir, verr))
			if mp.Mode != "warn" {
				f.Severity = scanners.SeverityHigh
			}
			return []scanners.Finding{f}
		}
		if st == nil {
			rule := RuleIdentity
			if errors.Is(verr, trust.ErrInvalid) {
				rule = RuleInvalid
			}
			return []scanners.Finding{scanners.At(a, rule, 0, fmt.Sprintf(
				"model signature %s for %s does not verify against the policy (%v); do not load this model until it is re-fetched or re-signed by a trusted signer", a.Path, dir, verr))}
		}
	}
	var out []scanners.Finding
	if mp == nil {
		out = append(out, scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
			"model signature %s (%s method) is present but no trusted signer is configured for %s, so only the files were compared with it; add the signer under signatures.models in .mlwarden.yaml", a.Path, sig.Method, dir)))
		if st == nil {
			return out
		}
	}
	rep, err := modelsig.Compare(ctx, h, dir, sig.Method, signer, st, opts)
	if err != nil {
		return append(out, scanners.At(a, RuleUnverified, 0, fmt.Sprintf("model %s could not be compared with %s: %v", dir, a.Path, err)))
	}
	sub := func(n string) string {
		if n == "." {
			return dir
		}
		return path.Join(dir, n)
	}
	for _, n := range rep.Modified {
		out = append(out, s.fileFinding(a, RuleChecksum, sub(n), fmt.Sprintf(
			"%s differs from its digest in the model signature %s; the weights were changed or corrupted after signing; do not load them, fetch the model again", sub(n), a.Path)))
	}
	for _, n := range rep.Missing {
		out = append(out, s.fileFinding(a, RuleMissing, sub(n), fmt.Sprintf(
			"%s is signed in %s but missing; the model is incomplete; fetch it again", sub(n), a.Path)))
	}
	for _, n := range rep.Extra {
		out = append(out, s.fileFinding(a, RuleNotSigned, sub(n), fmt.Sprintf(
			"%s is in the signed model directory but not covered by %s; whatever loads the model may load it unvouched; remove it or re-sign the model", sub(n), a.Path)))
	}
	for _, n := range rep.Unsafe {
		out = append(out, s.fileFinding(a, RuleUnsafePath, sub(n), fmt.Sprintf(
			"%s in the signed model was not read: %s; remove the link or re-sign with symlinks allowed", sub(strings.SplitN(n, " ", 2)[0]), n)))
	}
	return out
}

// bundleSuffix names a Sigstore bundle beside the file it signs, as
// `cosign sign-blob --bundle FILE.sigstore.json` writes it.
const bundleSuffix = ".sigstore.json"

// scanBlobBundle verifies FILE.sigstore.json against FILE with the
// authorities of the model policy covering its directory.
func (s *Scanner) scanBlobBundle(ctx context.Context, a *scanners.Artifact, data []byte) ([]scanners.Finding, error) {
	if bytes.Contains(data, []byte(`"dsseEnvelope"`)) {
		// An attestation: its subjects are named inside, not the file beside
		// it. Judged only when that file exists (a signed statement about it).
		if h, dir, err := s.hasher(a); err == nil && h != nil {
			if _, err := h.Root().Stat(path.Join(dir, strings.TrimSuffix(path.Base(a.Path), bundleSuffix))); errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
		}
	}
	return s.scanSignedFile(ctx, a, bundleSuffix, "Sigstore bundle", func(_ *os.Root, _ string, digest []byte, t blobsig.Trust) error {
		_, err := blobsig.VerifyBundle(data, digest, t)
		return err
	})
}

// scanSignedFile verifies a, a signature named FILE+suffix (what says which
// kind), against FILE beside it with the model policy of its directory.
// verify checks the signature over FILE's sha256 with one authority.
func (s *Scanner) scanSignedFile(ctx context.Context, a *scanners.Artifact, suffix, what string,
	verify func(r *os.Root, file string, digest []byte, t blobsig.Trust) error) ([]scanners.Finding, error) {
	h, dir, err := s.hasher(a)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return []scanners.Finding{scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
			"%s %s was not verified: it lives inside an image or git history; run mlwarden verify blob on the extracted file", what, a.Path))}, nil
	}
	file := path.Join(dir, strings.TrimSuffix(path.Base(a.Path), suffix))
	hx, _, err := h.Sum(ctx, file, "sha256")
	if errors.Is(err, fs.ErrNotExist) {
		return []scanners.Finding{s.fileFinding(a, RuleMissing, file, fmt.Sprintf(
			"%s is signed by the %s %s but missing; fetch it from the publisher", file, what, a.Path))}, nil
	}
	if err != nil {
		return []scanners.Finding{scanners.At(a, RuleUnsafePath, 0, fmt.Sprintf(
			"%s (signed by %s) was not read: %v; a symlink out of the target or a special file vouches for nothing", file, a.Path, err))}, nil
	}
	mp := s.lp.model(dir)
	if mp == nil {
		return []scanners.Finding{scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
			"%s %s for %s is present but no trusted signer is configured for %s; add one under signatures.models in .mlwarden.yaml", what, a.Path, file, dir))}, nil
	}
	digest, _ := hex.DecodeString(hx)
	return blobFindings(a, file, mp, func(t blobsig.Trust) error { return verify(h.Root(), file, digest, t) }), nil
}

// prefetchSigned starts hashing the file that a signature beside it
// (FILE+suffix) signs, when that file is large.
func (s *Scanner) prefetchSigned(ctx context.Context, a *scanners.Artifact, suffix string) {
	if h, dir, err := s.hasher(a); err == nil && h != nil {
		h.Prefetch(ctx, path.Join(dir, strings.TrimSuffix(path.Base(a.Path), suffix)), "sha256", scanners.SmallFile)
	}
}

// detachedSuffix names a signature beside the file it signs, as
// `cosign sign-blob --output-signature FILE.sig` writes it (with the
// signing certificate in FILE.pem when signed keyless).
const (
	detachedSuffix = ".sig"
	maxDetached    = 64 << 10
)

// detachedSignature returns the signature bytes of a cosign detached
// signature: base64 text (a DER ECDSA or RSA signature). GPG's binary or
// armored .sig files are not cosign's and return false.
func detachedSignature(data []byte) ([]byte, bool) {
	t := strings.TrimSpace(string(data))
	if t == "" || strings.HasPrefix(t, "-----BEGIN") {
		return nil, false
	}
	if _, err := base64.StdEncoding.DecodeString(t); err != nil {
		return nil, false
	}
	return []byte(t), true
}

// scanDetached verifies FILE.sig (and FILE.pem when present) against FILE
// with the key authorities of the model policy covering its directory.
func (s *Scanner) scanDetached(ctx context.Context, a *scanners.Artifact, sig []byte) ([]scanners.Finding, error) {
	return s.scanSignedFile(ctx, a, detachedSuffix, "detached signature", func(r *os.Root, file string, digest []byte, t blobsig.Trust) error {
		var cert []byte
		if fi, err := r.Stat(file + ".pem"); err == nil && fi.Mode().IsRegular() && fi.Size() <= maxDetached {
			cert, _ = r.ReadFile(file + ".pem")
		}
		_, err := blobsig.VerifyDetached(sig, cert, digest, t)
		return err
	})
}

// blobFindings verifies a file's signature with each key or keyless
// authority of mp (certificate chains are for model signatures) and returns
// nothing when one verifies; otherwise one finding: invalid, identity
// mismatch, or unverified (high where the policy requires a signer) when
// the signature's kind cannot be checked offline.
func blobFindings(a *scanners.Artifact, file string, mp *loadedModel, verify func(blobsig.Trust) error) []scanners.Finding {
	var verr error
	for _, au := range mp.auth {
		if au.key == nil && au.root == nil {
			continue
		}
		err := verify(blobsig.Trust{Key: au.key, TrustedMaterial: au.root, Identities: au.identities})
		if err == nil {
			return nil
		}
		if verr == nil || errors.Is(err, trust.ErrInvalid) {
			verr = err
		}
	}
	if verr == nil {
		verr = fmt.Errorf("%w: the policy for %s lists no key or keyless authority, which file signatures need", trust.ErrIdentity, path.Dir(file))
	}
	if errors.Is(verr, trust.ErrUnsupported) {
		f := scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
			"%s for %s cannot be verified offline (%v), so the policy's signer requirement is not met; publish a Sigstore bundle (cosign sign-blob --bundle %s%s)", a.Path, file, verr, path.Base(file), bundleSuffix))
		if mp.Mode != "warn" {
			f.Severity = scanners.SeverityHigh
		}
		return []scanners.Finding{f}
	}
	rule := RuleIdentity
	if errors.Is(verr, trust.ErrInvalid) {
		rule = RuleInvalid
	}
	return []scanners.Finding{scanners.At(a, rule, 0, fmt.Sprintf(
		"%s does not verify %s against the policy (%v); do not use the file until it is re-fetched or re-signed by a trusted signer", a.Path, file, verr))}
}

// fileFinding locates a finding at another file of the same target.
func (s *Scanner) fileFinding(a *scanners.Artifact, r scanners.Rule, p, msg string) scanners.Finding {
	b := *a
	b.Path, b.Lines = p, nil
	return scanners.At(&b, r, 0, msg)
}

// scanUnsigned reports, once per directory, model files with neither a
// model signature nor a checksum manifest beside them.
func (s *Scanner) scanUnsigned(a *scanners.Artifact) []scanners.Finding {
	h, dir, err := s.hasher(a)
	if err != nil || h == nil {
		return nil
	}
	key := "unsigned\x00" + a.Target + "\x00" + dir
	s.mu.Lock()
	seen := s.done[key]
	s.done[key] = true
	s.mu.Unlock()
	if seen {
		return nil
	}
	entries, err := fsReadDir(h.Root(), dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		n := e.Name()
		if slices.Contains(s.sigNames(dir), n) || checksums.IsManifestName(n) || strings.HasSuffix(n, ".sigstore.json") || strings.HasSuffix(n, ".sig") {
			return nil
		}
	}
	// A model signature higher up covers sub-directories.
	for d := dir; d != "." && d != "/"; {
		d = path.Dir(d)
		for _, n := range s.sigNames(d) {
			if _, err := h.Root().Stat(path.Join(d, n)); err == nil {
				return nil
			}
		}
	}
	mp := s.lp.model(dir)
	sev, what := scanners.SeverityInfo, "no signature policy covers it"
	if mp != nil && mp.Mode != "warn" {
		sev, what = scanners.SeverityHigh, fmt.Sprintf("the policy requires models under %q to be signed", mp.Path)
	}
	b := *a
	b.Path = dir
	f := scanners.At(&b, RuleUnsigned, 0, fmt.Sprintf(
		"model directory %s (e.g. %s) has no model signature (model.sig) and no checksum manifest; %s; sign it with model_signing or publish a SHA256SUMS, and verify it before loading", dir, path.Base(a.Path), what))
	f.Severity = sev
	return []scanners.Finding{f}
}

func fsReadDir(r *os.Root, dir string) ([]os.DirEntry, error) {
	f, err := r.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// scanImage verifies an image target's signature once, when the policy
// names it.
func (s *Scanner) scanImage(ctx context.Context, a *scanners.Artifact) ([]scanners.Finding, error) {
	key := "image\x00" + a.Target
	s.mu.Lock()
	seen := s.done[key]
	s.done[key] = true
	s.mu.Unlock()
	if seen {
		return nil, nil
	}
	return s.imageFindings(ctx, a)
}

// VerifyImage checks one image reference against the policy's images, as
// an admission webhook asks before a Pod starts: nil when no policy entry
// names the image or one of its authorities verifies it, otherwise an error
// that says why (unsigned, invalid, not signed by a trusted identity, or
// the registry could not be asked).
func (s *Scanner) VerifyImage(ctx context.Context, ref string) error {
	fs, err := s.imageFindings(ctx, &scanners.Artifact{Kind: scanners.ArtifactImageConfig, Target: ref, TargetKind: scanners.KindImage})
	if err != nil {
		return err
	}
	for _, f := range fs {
		if f.RuleID != RuleUnverified.ID {
			return errors.New(f.Message)
		}
	}
	return nil
}

// imageFindings verifies ref (a.Target) against the image policy.
func (s *Scanner) imageFindings(ctx context.Context, a *scanners.Artifact) ([]scanners.Finding, error) {
	ref := a.Target
	alt := []string{}
	if r, err := name.ParseReference(ref, s.nameOpts...); err == nil {
		alt = append(alt, r.Name(), r.Context().Name())
	}
	ip := s.lp.image(ref, alt...)
	if ip == nil {
		return nil, nil
	}
	b := *a
	b.Path = ""
	sev := scanners.SeverityHigh
	if ip.Mode == "warn" {
		sev = scanners.SeverityInfo
	}
	if strings.HasPrefix(ref, "oci:") || strings.HasPrefix(ref, "docker-archive:") {
		f := scanners.At(&b, RuleUnverified, 0, fmt.Sprintf(
			"image %s matches the signature policy %q but is a local copy; its cosign signature lives in the registry; verify the registry reference with mlwarden verify image", ref, ip.Glob))
		return []scanners.Finding{f}, nil
	}
	// Verify the bytes that were scanned: the digest the image source
	// pulled, not whatever the tag points to by now.
	verifyRef := ref
	if r, err := name.ParseReference(ref, s.nameOpts...); err == nil && strings.HasPrefix(a.Digest, "sha256:") {
		verifyRef = r.Context().Digest(a.Digest).String()
	}
	var errs []error
	for _, au := range ip.auth {
		o := imagesig.Options{Key: au.key, TrustedMaterial: au.root, Identities: au.identities,
			AttestationType: ip.AttestationType, Remote: s.remote, NameOptions: s.nameOpts}
		if _, err := s.verify(ctx, verifyRef, o); err != nil {
			errs = append(errs, err)
			continue
		}
		return nil, nil
	}
	var invalid, identity, unsigned error
	for _, e := range errs {
		switch {
		case errors.Is(e, trust.ErrInvalid) && invalid == nil:
			invalid = e
		case errors.Is(e, trust.ErrIdentity) && identity == nil:
			identity = e
		case errors.Is(e, trust.ErrUnsigned) && unsigned == nil:
			unsigned = e
		}
	}
	switch {
	case invalid != nil:
		return []scanners.Finding{scanners.At(&b, RuleInvalid, 0, fmt.Sprintf(
			"image %s has a signature that does not verify (%v); it may have been tampered with or its signature copied from another image; do not run it", ref, invalid))}, nil
	case identity != nil:
		return []scanners.Finding{scanners.At(&b, RuleIdentity, 0, fmt.Sprintf(
			"image %s is not signed by an authority of the policy %q (%v); do not run it until a trusted signer signs it", ref, ip.Glob, identity))}, nil
	case unsigned != nil:
		f := scanners.At(&b, RuleUnsigned, 0, fmt.Sprintf(
			"image %s has no cosign signature for its digest, but the policy %q requires one; a moved tag or an unsigned push; pin the signed digest or sign the image", ref, ip.Glob))
		f.Severity = sev
		return []scanners.Finding{f}, nil
	}
	// The registry could not be reached or answered oddly: not a verdict,
	// so the run fails (exit 2) instead of passing.
	return nil, fmt.Errorf("image %s: signatures could not be checked: %w", ref, errors.Join(errs...))
}
