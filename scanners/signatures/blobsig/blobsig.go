// Package blobsig verifies a file against what `cosign sign-blob` writes
// beside it: a Sigstore bundle (FILE.sigstore.json, new or legacy cosign
// format) or a detached signature (FILE.sig, base64) with an optional
// certificate (FILE.pem). Trust comes from files only.
package blobsig

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"

	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// Trust is what a blob signature must verify against: a public key, or a
// trusted root with at least one identity (an empty identity list is
// refused, never "anyone"). A key with a trusted root (and no identities)
// is a keyed bundle whose signing time the root's timestamp authorities
// (RFC 3161) or transparency logs vouch for, as cosign verifies it.
type Trust struct {
	Key             crypto.PublicKey
	TrustedMaterial root.TrustedMaterial
	Identities      []trust.Identity
}

// Result says who signed.
type Result struct {
	// Signer is "key" or the matched identity.
	Signer string
}

// maxBundle bounds a bundle or signature file.
const maxBundle = 16 << 20

// VerifyBundle checks a Sigstore bundle (or a legacy cosign blob bundle)
// for the blob whose SHA-256 is digest.
func VerifyBundle(bundleJSON []byte, digest []byte, t Trust) (*Result, error) {
	if len(bundleJSON) > maxBundle {
		return nil, fmt.Errorf("%w: bundle larger than %d bytes", trust.ErrInvalid, maxBundle)
	}
	var probe struct {
		MediaType       string `json:"mediaType"`
		Base64Signature string `json:"base64Signature"`
		Cert            string `json:"cert"`
	}
	if err := json.Unmarshal(bundleJSON, &probe); err != nil {
		return nil, fmt.Errorf("%w: bundle is not JSON: %v", trust.ErrInvalid, err)
	}
	if probe.MediaType == "" && probe.Base64Signature != "" {
		// Legacy `cosign sign-blob --bundle`: signature, certificate and a
		// Rekor SET. Offline we can check it with a key only.
		if t.Key == nil {
			return nil, fmt.Errorf("%w: legacy cosign bundle with a certificate needs Rekor to check; verify with --key or re-sign with --new-bundle-format", trust.ErrUnsupported)
		}
		return VerifyDetached([]byte(probe.Base64Signature), nil, digest, t)
	}
	b := &bundle.Bundle{}
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return nil, fmt.Errorf("%w: bundle: %v", trust.ErrInvalid, err)
	}
	return VerifyEntity(b, digest, t)
}

// VerifyEntity verifies a Sigstore entity over the blob digest (SHA-256).
func VerifyEntity(e verify.SignedEntity, digest []byte, t Trust) (*Result, error) {
	art := verify.WithArtifactDigest("sha256", digest)
	if t.Key != nil {
		sv, err := signature.LoadVerifier(t.Key, hashFor(t.Key))
		if err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		var tm root.TrustedMaterial = root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(sv, zeroTime, zeroTime), nil
		})
		opts := []verify.VerifierOption{verify.WithNoObserverTimestamps()}
		signer := "key"
		if t.TrustedMaterial != nil {
			// A keyed bundle checked against a trusted root: its RFC 3161
			// timestamps (or transparency-log entries) must verify with the
			// root's authorities, at least one of them.
			tm = root.TrustedMaterialCollection{t.TrustedMaterial, tm}
			opts = []verify.VerifierOption{verify.WithObserverTimestamps(1)}
			signer = "key (signing time vouched for by the trusted root)"
		}
		v, err := verify.NewVerifier(tm, opts...)
		if err != nil {
			return nil, err
		}
		if _, err := v.Verify(e, verify.NewPolicy(art, verify.WithKey())); err != nil {
			return nil, classify(err)
		}
		return &Result{Signer: signer}, nil
	}
	if t.TrustedMaterial == nil {
		return nil, fmt.Errorf("%w: give a public key, or a trusted root and the signer's identity", trust.ErrIdentity)
	}
	if len(t.Identities) == 0 {
		return nil, fmt.Errorf("%w: keyless verification needs --certificate-identity and --certificate-oidc-issuer", trust.ErrIdentity)
	}
	opts := []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}
	v, err := verify.NewVerifier(t.TrustedMaterial, opts...)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, id := range t.Identities {
		if err := id.Validate(); err != nil {
			return nil, err
		}
		ci, err := verify.NewShortCertificateIdentity(id.Issuer, id.IssuerRegExp, id.Subject, id.SubjectRegExp)
		if err != nil {
			return nil, err
		}
		if _, err := v.Verify(e, verify.NewPolicy(art, verify.WithCertificateIdentity(ci))); err != nil {
			lastErr = err
			continue
		}
		return &Result{Signer: id.String()}, nil
	}
	if _, err := v.Verify(e, verify.NewPolicy(art, verify.WithoutIdentitiesUnsafe())); err == nil {
		return nil, fmt.Errorf("%w: signed by %s, not by a trusted identity (%v)", trust.ErrIdentity, signerOf(e), lastErr)
	}
	return nil, classify(lastErr)
}

func signerOf(e verify.SignedEntity) string {
	vc, err := e.VerificationContent()
	if err != nil || vc.Certificate() == nil {
		return "an unknown signer"
	}
	c := vc.Certificate()
	var names []string
	names = append(names, c.EmailAddresses...)
	for _, u := range c.URIs {
		names = append(names, u.String())
	}
	if len(names) == 0 {
		return "an unknown signer"
	}
	return strings.Join(names, ", ")
}

func classify(err error) error {
	return fmt.Errorf("%w: %v", trust.ErrInvalid, err)
}

// VerifyDetached checks a base64 signature (FILE.sig) over the blob whose
// SHA-256 is digest, with t.Key. A certificate (FILE.pem, PEM or base64 PEM
// as cosign writes it) without a bundle cannot be checked offline: its
// validity time needs a transparency-log entry.
func VerifyDetached(sigB64, certPEM, digest []byte, t Trust) (*Result, error) {
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sigB64)))
	if err != nil {
		return nil, fmt.Errorf("%w: signature is not base64: %v", trust.ErrInvalid, err)
	}
	if t.Key == nil {
		if certPEM != nil {
			return nil, fmt.Errorf("%w: a certificate without a bundle cannot be verified offline (no signed time); verify with --bundle FILE.sigstore.json", trust.ErrUnsupported)
		}
		return nil, fmt.Errorf("%w: give the public key (--key)", trust.ErrIdentity)
	}
	if certPEM != nil {
		cert, err := parseCert(certPEM)
		if err != nil {
			return nil, err
		}
		if !samePublicKey(cert.PublicKey, t.Key) {
			return nil, fmt.Errorf("%w: the certificate's key is not the given key", trust.ErrIdentity)
		}
	}
	if hashFor(t.Key) != crypto.SHA256 {
		return nil, fmt.Errorf("%w: detached signatures are checked with SHA-256 keys (ECDSA P-256, RSA) only", trust.ErrUnsupported)
	}
	sv, err := signature.LoadVerifier(t.Key, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if err := sv.VerifySignature(bytes.NewReader(sig), nil, options.WithDigest(digest)); err != nil {
		return nil, fmt.Errorf("%w: the signature does not verify with the given key: %v", trust.ErrInvalid, err)
	}
	return &Result{Signer: "key"}, nil
}

func parseCert(b []byte) (*x509.Certificate, error) {
	if blk, _ := pem.Decode(b); blk == nil {
		if d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err == nil {
			b = d
		}
	}
	cs, err := cryptoutils.UnmarshalCertificatesFromPEM(b)
	if err != nil || len(cs) == 0 {
		return nil, fmt.Errorf("%w: certificate: not PEM (%v)", trust.ErrInvalid, err)
	}
	return cs[0], nil
}

func samePublicKey(a, b crypto.PublicKey) bool {
	ae, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ae.Equal(b)
}
