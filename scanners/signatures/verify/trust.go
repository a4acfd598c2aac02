package verify

import (
	"crypto/ecdsa"
	"errors"
	"fmt"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mlwarden/mlwarden/scanners/signatures/blobsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// TrustFiles names what a signature must chain to, as files, the way the
// flags of cosign and model_signing do. Exactly one kind is given: a public
// key, a certificate chain (model signatures only), or keyless — a trusted
// root with the signer's identity. For blobs and images, a key with a
// trusted root (and no identity) checks a keyed bundle's RFC 3161
// timestamps against the root's timestamp authorities, as cosign does.
type TrustFiles struct {
	// Key is a PEM public key (--key, cosign.pub).
	Key string
	// CertificateChain holds PEM files of trusted CA certificates
	// (--certificate-chain), for model signatures made with a certificate.
	CertificateChain []string
	// TrustedRoot is a Sigstore trusted_root.json (--trusted-root). It is
	// never fetched.
	TrustedRoot string
	// Identity is the keyless signer (--identity/--certificate-identity and
	// --oidc-issuer/--certificate-oidc-issuer, exact or -regexp). An empty
	// identity never means anyone.
	Identity trust.Identity
}

// ModelTrust loads the files as trust for an OpenSSF model signature.
func (f TrustFiles) ModelTrust() (modelsig.Trust, error) {
	var t modelsig.Trust
	n := 0
	if f.Key != "" {
		n++
		k, err := trust.LoadPublicKey(f.Key)
		if err != nil {
			return t, err
		}
		ek, ok := k.(*ecdsa.PublicKey)
		if !ok {
			return t, fmt.Errorf("--key: model signatures use elliptic-curve keys, got %T", k)
		}
		t.Key = ek
	}
	if len(f.CertificateChain) > 0 {
		n++
		cs, err := trust.LoadCertificates(f.CertificateChain...)
		if err != nil {
			return t, err
		}
		t.Chain = cs
	}
	tr, id, err := f.keyless()
	if err != nil {
		return t, err
	}
	if tr != nil {
		n++
		t.TrustedMaterial = tr
		t.Identity, t.IdentityRegexp, t.OIDCIssuer, t.OIDCIssuerRegexp = id.Subject, id.SubjectRegExp, id.Issuer, id.IssuerRegExp
	}
	if n != 1 {
		return t, errors.New("give exactly one of --key, --certificate-chain, or --identity/--oidc-issuer with --trusted-root")
	}
	return t, nil
}

// CosignTrust loads the files as trust for what cosign signs: blobs and
// images, with a key or keyless. Certificate chains are refused.
func (f TrustFiles) CosignTrust() (blobsig.Trust, error) {
	var t blobsig.Trust
	if len(f.CertificateChain) > 0 {
		return t, errors.New("--certificate-chain is for model signatures; give --key, or --certificate-identity and --certificate-oidc-issuer with --trusted-root")
	}
	if f.Key != "" {
		k, err := trust.LoadPublicKey(f.Key)
		if err != nil {
			return t, err
		}
		t.Key = k
		if f.TrustedRoot != "" {
			if f.Identity != (trust.Identity{}) {
				return t, errors.New("give --key, or --certificate-identity and --certificate-oidc-issuer with --trusted-root, not both (--key with --trusted-root alone checks a keyed bundle's RFC 3161 timestamps)")
			}
			tr, err := trust.LoadTrustedRoot(f.TrustedRoot)
			if err != nil {
				return t, err
			}
			t.TrustedMaterial = tr
		}
		return t, nil
	}
	tr, id, err := f.keyless()
	if err != nil {
		return t, err
	}
	if tr != nil {
		t.TrustedMaterial, t.Identities = tr, []trust.Identity{*id}
	}
	if (t.Key == nil) == (tr == nil) {
		return t, errors.New("give --key, or --certificate-identity and --certificate-oidc-issuer with --trusted-root")
	}
	return t, nil
}

// keyless returns the trusted root and the identity, or nil when no keyless
// field is set. Half a policy is an error: an empty identity never means
// anyone.
func (f TrustFiles) keyless() (*root.TrustedRoot, *trust.Identity, error) {
	id := f.Identity
	if f.TrustedRoot == "" && id == (trust.Identity{}) {
		return nil, nil, nil
	}
	if f.TrustedRoot == "" {
		return nil, nil, errors.New("keyless verification needs --trusted-root FILE (trusted_root.json); mlwarden never fetches one")
	}
	if err := id.Validate(); err != nil {
		return nil, nil, fmt.Errorf("keyless verification: %w", err)
	}
	tr, err := trust.LoadTrustedRoot(f.TrustedRoot)
	if err != nil {
		return nil, nil, err
	}
	return tr, &id, nil
}
