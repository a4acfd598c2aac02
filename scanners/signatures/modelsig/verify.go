package modelsig

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"errors"
	"fmt"
	"path"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
)

// Trust is what a signature must chain to. Exactly one of Key, Chain or
// TrustedMaterial is used, by the signature's method.
type Trust struct {
	// Key verifies key-method signatures.
	Key *ecdsa.PublicKey
	// Chain holds the trusted certificates for the certificate method.
	Chain []*x509.Certificate
	// TrustedMaterial (a trusted_root.json) verifies Sigstore keyless
	// signatures, with the identity policy below. An empty identity is
	// refused: it never means "anyone".
	TrustedMaterial              root.TrustedMaterial
	Identity, IdentityRegexp     string
	OIDCIssuer, OIDCIssuerRegexp string
}

// Report is a verified signature and the model compared with it.
type Report struct {
	Method        Method
	Signer        string // key hint, certificate subject or Sigstore identity
	PredicateType string
	Serialization Serialization
	Resources     int
	*Result
}

// VerifySignature checks a signature's authenticity against t and returns
// its statement.
func VerifySignature(s *Signature, t Trust) (*Statement, string, error) {
	var signer string
	switch s.Method {
	case MethodKey:
		if err := s.keyAlgorithm(); err != nil {
			return nil, "", err
		}
		if t.Key == nil {
			return nil, "", fmt.Errorf("%w: signed with a key; give the public key", ErrIdentity)
		}
		if err := s.VerifyKey(t.Key); err != nil {
			return nil, "", err
		}
		signer = "key " + s.KeyHint
	case MethodCertificate:
		if len(t.Chain) == 0 {
			return nil, "", fmt.Errorf("%w: signed with a certificate; give the trusted certificate chain", ErrIdentity)
		}
		if err := s.VerifyChain(t.Chain); err != nil {
			return nil, "", err
		}
		signer = "certificate " + s.Chain[0].Subject.String()
	case MethodSigstore:
		b := &bundle.Bundle{}
		if err := b.UnmarshalJSON(s.raw); err != nil {
			return nil, "", fmt.Errorf("%w: Sigstore bundle: %v", ErrInvalid, err)
		}
		pt, payload, err := VerifySigstore(b, t)
		if err != nil {
			return nil, "", err
		}
		s.PayloadType, s.Payload = pt, payload
		signer = "sigstore " + t.Identity + t.IdentityRegexp
	default:
		return nil, "", fmt.Errorf("%w: method %q", ErrUnsupported, s.Method)
	}
	st, err := ParseStatement(s.PayloadType, s.Payload)
	return st, signer, err
}

// VerifySigstore verifies a keyless Sigstore entity offline: certificate to
// the trusted root's Fulcio CAs, a transparency-log entry, its signed time
// and the identity policy. It returns the DSSE payload.
func VerifySigstore(e verify.SignedEntity, t Trust) (payloadType string, payload []byte, err error) {
	if t.TrustedMaterial == nil {
		return "", nil, fmt.Errorf("%w: keyless signature; give a trusted root (trusted_root.json)", ErrIdentity)
	}
	if (t.Identity == "" && t.IdentityRegexp == "") || (t.OIDCIssuer == "" && t.OIDCIssuerRegexp == "") {
		return "", nil, fmt.Errorf("%w: keyless signature; give the signer's identity and OIDC issuer", ErrIdentity)
	}
	v, err := verify.NewVerifier(t.TrustedMaterial, verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
	if err != nil {
		return "", nil, err
	}
	id, err := verify.NewShortCertificateIdentity(t.OIDCIssuer, t.OIDCIssuerRegexp, t.Identity, t.IdentityRegexp)
	if err != nil {
		return "", nil, fmt.Errorf("identity policy: %w", err)
	}
	if _, err := v.Verify(e, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithCertificateIdentity(id))); err != nil {
		// Tell a wrong signer from a broken signature.
		if _, err2 := v.Verify(e, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithoutIdentitiesUnsafe())); err2 == nil {
			return "", nil, fmt.Errorf("%w: %v", ErrIdentity, err)
		}
		return "", nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	env := sc.EnvelopeContent()
	if env == nil {
		return "", nil, fmt.Errorf("%w: bundle holds no DSSE envelope", ErrInvalid)
	}
	raw := env.RawEnvelope()
	p, err := raw.DecodeB64Payload()
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return raw.PayloadType, p, nil
}

// Verify checks the signature sigData of the model at modelPath (relative
// to h's root) against t, then compares the model with the signed manifest.
// The error wraps ErrInvalid, ErrIdentity or ErrUnsupported when the
// signature is at fault; a Report with !OK() means the files differ.
func Verify(ctx context.Context, h *checksums.Hasher, modelPath string, sigData []byte, t Trust, o Options) (*Report, error) {
	s, err := ParseSignature(sigData)
	if err != nil {
		return nil, err
	}
	st, signer, err := VerifySignature(s, t)
	if err != nil {
		return nil, err
	}
	return Compare(ctx, h, modelPath, s.Method, signer, st, o)
}

// Compare checks the model against an already verified statement.
func Compare(ctx context.Context, h *checksums.Hasher, modelPath string, m Method, signer string, st *Statement, o Options) (*Report, error) {
	res, err := CheckModel(ctx, h, path.Clean(modelPath), st, o)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return nil, err
		}
		return nil, err
	}
	return &Report{Method: m, Signer: signer, PredicateType: st.PredicateType, Serialization: st.Serialization,
		Resources: len(st.Resources), Result: res}, nil
}
