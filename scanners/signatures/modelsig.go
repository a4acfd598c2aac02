package signatures

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// prefetchModel starts hashing the large files a model signature names
// (files serialization), as scanManifest does for manifests. The payload is
// not trusted here: it only picks files inside the target to read early.
func (s *Scanner) prefetchModel(ctx context.Context, a *scanners.Artifact, data []byte) {
	h, dir := s.hasher(a)
	if h == nil {
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
	h, dir := s.hasher(a)
	if h == nil {
		return []scanners.Finding{scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
			"model signature %s was not verified: it lives inside an image or git history; run mlwarden verify model on the extracted model", a.Path))}
	}
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
	if mp != nil && len(out) == 0 {
		// Verified by a trusted signer, every file as signed: the bill of
		// materials says so, and by whom.
		scanners.AddComponent(ctx, scanners.Component{Kind: scanners.ComponentSignature, Path: a.Path, Subject: dir,
			Signer: signer, Layer: a.Layer, Commit: a.Commit, Properties: map[string]string{"method": string(sig.Method)}})
	}
	return out
}
