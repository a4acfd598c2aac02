// Package trust holds what signature verification trusts — public keys,
// certificate chains, a Sigstore trusted root and identity policies — loaded
// from files only (never through TUF or the network), and the errors every
// verifier in the signatures check wraps.
package trust

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Errors verifiers wrap; test with errors.Is.
var (
	// ErrInvalid: the signature is malformed, does not verify, or does not
	// match the artifact.
	ErrInvalid = errors.New("invalid signature")
	// ErrIdentity: the signature is valid but made by a key or identity the
	// policy does not trust.
	ErrIdentity = errors.New("signer not trusted")
	// ErrUnsupported: the signature uses something this verifier cannot
	// check, so nothing was verified.
	ErrUnsupported = errors.New("unsupported signature")
	// ErrUnsigned: there is no signature.
	ErrUnsigned = errors.New("no signature")
)

// Identity is a keyless signer: the certificate's subject (SAN) and OIDC
// issuer, each exact or a regular expression (Go RE2 syntax, anchored as
// the author writes it).
type Identity struct {
	Subject       string `yaml:"subject,omitempty" json:"subject,omitempty"`
	SubjectRegExp string `yaml:"subjectRegExp,omitempty" json:"subjectRegExp,omitempty"`
	Issuer        string `yaml:"issuer,omitempty" json:"issuer,omitempty"`
	IssuerRegExp  string `yaml:"issuerRegExp,omitempty" json:"issuerRegExp,omitempty"`
}

// Validate refuses an identity that would match anyone.
func (id Identity) Validate() error {
	if id.Subject == "" && id.SubjectRegExp == "" {
		return errors.New("identity needs a subject or subjectRegExp (an empty identity would trust anyone)")
	}
	if id.Issuer == "" && id.IssuerRegExp == "" {
		return errors.New("identity needs an issuer or issuerRegExp (an empty issuer would trust any OIDC provider)")
	}
	for _, re := range []string{id.SubjectRegExp, id.IssuerRegExp} {
		if re != "" {
			if _, err := regexp.Compile(re); err != nil {
				return fmt.Errorf("identity regexp %q: %w", re, err)
			}
		}
	}
	return nil
}

func (id Identity) String() string {
	s, i := id.Subject, id.Issuer
	if s == "" {
		s = "~" + id.SubjectRegExp
	}
	if i == "" {
		i = "~" + id.IssuerRegExp
	}
	return s + " (issuer " + i + ")"
}

// LoadPublicKey reads a PEM public key (cosign.pub, an ECDSA/RSA/Ed25519
// SubjectPublicKeyInfo) from path.
func LoadPublicKey(path string) (crypto.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	k, err := cryptoutils.UnmarshalPEMToPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	return k, nil
}

// LoadCertificates reads every PEM certificate in the files.
func LoadCertificates(paths ...string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read certificates: %w", err)
		}
		cs, err := cryptoutils.UnmarshalCertificatesFromPEM(b)
		if err != nil {
			return nil, fmt.Errorf("certificates %s: %w", p, err)
		}
		if len(cs) == 0 {
			return nil, fmt.Errorf("certificates %s: no PEM certificate found", p)
		}
		out = append(out, cs...)
	}
	return out, nil
}

// LoadTrustedRoot reads a Sigstore trusted_root.json. It never contacts TUF.
func LoadTrustedRoot(path string) (*root.TrustedRoot, error) {
	tr, err := root.NewTrustedRootFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("trusted root %s: %w", path, err)
	}
	return tr, nil
}
