package signatures

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures/blobsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// bundleSuffix names a Sigstore bundle beside the file it signs, as
// `cosign sign-blob --bundle FILE.sigstore.json` writes it.
const bundleSuffix = ".sigstore.json"

// scanBlobBundle verifies FILE.sigstore.json against FILE with the
// authorities of the model policy covering its directory.
func (s *Scanner) scanBlobBundle(ctx context.Context, a *scanners.Artifact, data []byte) ([]scanners.Finding, error) {
	if bytes.Contains(data, []byte(`"dsseEnvelope"`)) {
		// An attestation: its subjects are named inside, not the file beside
		// it. Judged only when that file exists (a signed statement about it).
		if h, dir := s.hasher(a); h != nil {
			if _, err := h.Stat(path.Join(dir, strings.TrimSuffix(path.Base(a.Path), bundleSuffix))); errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
		}
	}
	return s.scanSignedFile(ctx, a, bundleSuffix, "Sigstore bundle", func(_ *checksums.Hasher, _ string, digest []byte, t blobsig.Trust) error {
		_, err := blobsig.VerifyBundle(data, digest, t)
		return err
	})
}

// scanSignedFile verifies a, a signature named FILE+suffix (what says which
// kind), against FILE beside it with the model policy of its directory.
// verify checks the signature over FILE's sha256 with one authority.
func (s *Scanner) scanSignedFile(ctx context.Context, a *scanners.Artifact, suffix, what string,
	verify func(h *checksums.Hasher, file string, digest []byte, t blobsig.Trust) error) ([]scanners.Finding, error) {
	h, dir := s.hasher(a)
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
	return blobFindings(a, file, mp, func(t blobsig.Trust) error { return verify(h, file, digest, t) }), nil
}

// prefetchSigned starts hashing the file that a signature beside it
// (FILE+suffix) signs, when that file is large.
func (s *Scanner) prefetchSigned(ctx context.Context, a *scanners.Artifact, suffix string) {
	if h, dir := s.hasher(a); h != nil {
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
	return s.scanSignedFile(ctx, a, detachedSuffix, "detached signature", func(h *checksums.Hasher, file string, digest []byte, t blobsig.Trust) error {
		var cert []byte
		if fi, err := h.Stat(file + ".pem"); err == nil && fi.Mode().IsRegular() && fi.Size() <= maxDetached {
			cert, _ = readFile(h, file+".pem", maxDetached)
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

// readFile reads at most limit bytes of the file p through h, which refuses
// a symlink out of the target.
func readFile(h *checksums.Hasher, p string, limit int64) ([]byte, error) {
	f, err := h.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return data, nil
}
