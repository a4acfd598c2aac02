// Package imagesig verifies cosign signatures and attestations on container
// images with github.com/sigstore/cosign/v2's pkg/cosign: legacy .sig/.att
// tags and Sigstore-bundle referrers (with the sha256-<hex> fallback tag).
//
// It is strict where the library's defaults are lax: the signed payload is
// always bound to the resolved digest (ClaimVerifier), keyless verification
// always needs at least one identity, and nothing is fetched from TUF or
// Rekor: trust comes from a key or a trusted_root.json, and the only network
// access is to the registry named in the reference.
package imagesig

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// SignPredicate is the predicate type of cosign's Sigstore-bundle image
// signatures.
const SignPredicate = "https://sigstore.dev/cosign/sign/v1"

// Options say what to trust and how to reach the registry.
type Options struct {
	// Key verifies key-signed images (cosign.pub). Key-signed images are
	// expected without a transparency-log entry (signed with tlog upload off);
	// no Rekor is ever contacted.
	Key crypto.PublicKey
	// TrustedMaterial (trusted_root.json) and Identities verify keyless
	// signatures; the signature must carry its Rekor bundle.
	TrustedMaterial root.TrustedMaterial
	Identities      []trust.Identity
	// AttestationType, when set, verifies attestations of that predicate
	// type (a URI or one of cosign's short names) instead of signatures.
	AttestationType string
	// Annotations must all be present in the signed payload.
	Annotations map[string]any
	// Remote are options for the registry client (auth, transport).
	Remote []remote.Option
	// NameOptions parse the reference (name.Insecure for plain HTTP).
	NameOptions []name.Option
}

// Result is a verified image.
type Result struct {
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	// Format is "legacy" (.sig/.att tags) or "bundle" (Sigstore-bundle referrers).
	Format string `json:"format"`
	// Verified counts the signatures or attestations that verified.
	Verified int `json:"verified"`
	// Signer is "key" or the identities allowed.
	Signer string `json:"signer"`
}

// predicateAliases are cosign's --type short names.
var predicateAliases = map[string]string{
	"custom":           "https://cosign.sigstore.dev/attestation/v1",
	"slsaprovenance":   "https://slsa.dev/provenance/v0.2",
	"slsaprovenance02": "https://slsa.dev/provenance/v0.2",
	"slsaprovenance1":  "https://slsa.dev/provenance/v1",
	"spdx":             "https://spdx.dev/Document",
	"spdxjson":         "https://spdx.dev/Document",
	"cyclonedx":        "https://cyclonedx.org/bom",
	"vuln":             "https://cosign.sigstore.dev/attestation/vuln/v1",
	"openvex":          "https://openvex.dev/ns",
}

// PredicateType maps a cosign short name to its URI.
func PredicateType(t string) string {
	if u, ok := predicateAliases[t]; ok {
		return u
	}
	return t
}

func (o Options) checkOpts(ctx context.Context, attest bool) (*cosign.CheckOpts, string, error) {
	co := &cosign.CheckOpts{
		RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(append([]remote.Option{remote.WithContext(ctx)}, o.Remote...)...)},
		ClaimVerifier:      cosign.SimpleClaimVerifier,
		Annotations:        o.Annotations,
		Offline:            true, // never ask Rekor online
	}
	if attest {
		co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	}
	switch {
	case o.Key != nil:
		sv, err := signature.LoadVerifier(o.Key, hashFor(o.Key))
		if err != nil {
			return nil, "", fmt.Errorf("key: %w", err)
		}
		co.SigVerifier = sv
		co.IgnoreTlog = true // key-signed with tlog upload off; trust is the key
		co.IgnoreSCT = true
		co.TrustedMaterial = o.TrustedMaterial
		return co, "key", nil
	case o.TrustedMaterial != nil:
		if len(o.Identities) == 0 {
			return nil, "", fmt.Errorf("%w: keyless verification needs --certificate-identity and --certificate-oidc-issuer (an empty identity list never means anyone)", trust.ErrIdentity)
		}
		var names []string
		for _, id := range o.Identities {
			if err := id.Validate(); err != nil {
				return nil, "", err
			}
			co.Identities = append(co.Identities, cosign.Identity{Subject: id.Subject, SubjectRegExp: id.SubjectRegExp,
				Issuer: id.Issuer, IssuerRegExp: id.IssuerRegExp})
			names = append(names, id.String())
		}
		co.TrustedMaterial = o.TrustedMaterial
		// An embedded SCT is checked when the trusted root lists CT logs.
		co.IgnoreSCT = len(o.TrustedMaterial.CTLogs()) == 0
		return co, strings.Join(names, "; "), nil
	}
	return nil, "", fmt.Errorf("%w: give a public key (--key), or a trusted root and the signer's identity", trust.ErrIdentity)
}

// Verify checks the signatures (or, with AttestationType, attestations) of
// the image ref. It tries the legacy tags first, then Sigstore-bundle
// referrers.
func Verify(ctx context.Context, ref string, o Options) (*Result, error) {
	r, err := name.ParseReference(ref, o.NameOptions...)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	attest := o.AttestationType != ""
	co, signer, err := o.checkOpts(ctx, attest)
	if err != nil {
		return nil, err
	}
	digest, err := ociremote.ResolveDigest(r, co.RegistryClientOpts...)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", ref, err)
	}
	res := &Result{Reference: ref, Digest: digest.DigestStr(), Signer: signer}
	// Verify what the digest names from here on, so a tag moved between
	// the two steps cannot swap the image.
	var sigs []oci.Signature
	var legacyErr error
	if attest {
		sigs, _, legacyErr = cosign.VerifyImageAttestations(ctx, digest, co)
		if legacyErr == nil {
			sigs, legacyErr = filterPredicate(sigs, PredicateType(o.AttestationType))
		}
	} else {
		sigs, _, legacyErr = cosign.VerifyImageSignatures(ctx, digest, co)
	}
	if legacyErr == nil {
		res.Format, res.Verified = "legacy", len(sigs)
		return res, nil
	}
	// Sigstore-bundle referrers. cosign's bundle path takes one identity at
	// a time.
	want := SignPredicate
	if attest {
		want = PredicateType(o.AttestationType)
	}
	bundleErr := errNoBundles
	ids := co.Identities
	if len(ids) == 0 {
		ids = []cosign.Identity{{}}
	}
	for _, id := range ids {
		bco := *co
		bco.NewBundleFormat = true
		if id != (cosign.Identity{}) {
			bco.Identities = []cosign.Identity{id}
		}
		if bco.TrustedMaterial == nil {
			bco.TrustedMaterial = &root.BaseTrustedMaterial{}
		}
		var atts []oci.Signature
		atts, _, bundleErr = cosign.VerifyImageAttestations(ctx, digest, &bco)
		if bundleErr == nil {
			atts, bundleErr = filterPredicate(atts, want)
		}
		if bundleErr == nil {
			res.Format, res.Verified = "bundle", len(atts)
			return res, nil
		}
	}
	return nil, classify(legacyErr, bundleErr)
}

var errNoBundles = errors.New("no Sigstore bundles")

// classify picks the more telling of the two errors and wraps it in the
// check's sentinel errors. Errors that are not verdicts (registry or
// network failures) are returned as they are, so callers exit 2, not 1.
func classify(legacy, bundle error) error {
	lv, ln := verdict(legacy)
	bv, bn := verdict(bundle)
	switch {
	case ln && bn:
		return fmt.Errorf("%w: no cosign signature or Sigstore bundle for this digest (%v)", trust.ErrUnsigned, legacy)
	case lv != nil && !ln:
		return lv
	case bv != nil && !bn:
		return bv
	case !ln:
		return legacy
	default:
		return bundle
	}
}

// verdict sorts a cosign error: none (nothing signed for the digest), a
// verification verdict (returned wrapped), or neither.
func verdict(err error) (wrapped error, none bool) {
	if err == nil || errors.Is(err, errNoBundles) || errors.Is(err, trust.ErrUnsigned) {
		return nil, true
	}
	var noSig *cosign.ErrNoSignaturesFound
	var noMatchSig *cosign.ErrNoMatchingSignatures
	var noMatchAtt *cosign.ErrNoMatchingAttestations
	msg := err.Error()
	switch {
	case errors.As(err, &noSig):
		return nil, true
	case errors.As(err, &noMatchAtt) && (strings.TrimSpace(msg) == "no matching attestations:" || strings.Contains(msg, "no valid bundles exist")):
		return nil, true
	case errors.As(err, &noMatchSig), errors.As(err, &noMatchAtt):
		if strings.Contains(msg, "none of the expected identities matched") || strings.Contains(msg, "expected identity not found") ||
			strings.Contains(msg, "no matching CertificateIdentity") || strings.Contains(msg, "certificate identity") {
			return fmt.Errorf("%w: %v", trust.ErrIdentity, err), false
		}
		return fmt.Errorf("%w: %v", trust.ErrInvalid, err), false
	}
	return nil, false
}

// filterPredicate keeps the attestations of predicate type want.
func filterPredicate(sigs []oci.Signature, want string) ([]oci.Signature, error) {
	var out []oci.Signature
	var seen []string
	for _, s := range sigs {
		p, err := s.Payload()
		if err != nil {
			continue
		}
		pt, err := predicateOf(p)
		if err != nil {
			continue
		}
		if pt == want {
			out = append(out, s)
		} else {
			seen = append(seen, pt)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no verified attestation of type %s (found: %s)", trust.ErrUnsigned, want, strings.Join(seen, ", "))
	}
	return out, nil
}

// predicateOf reads the predicate type of a DSSE envelope payload, whether
// its payload field is base64 text (legacy .att) or bytes (bundle).
func predicateOf(envJSON []byte) (string, error) {
	var env struct {
		Payload string `json:"payload"`
	}
	if err := json.Unmarshal(envJSON, &env); err != nil {
		return "", err
	}
	stmt, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return "", err
	}
	var st struct {
		PredicateType string `json:"predicateType"`
	}
	if err := json.Unmarshal(stmt, &st); err != nil {
		return "", err
	}
	return st.PredicateType, nil
}

// hashFor is cosign's hash for a key: SHA-256 (cosign signs image payloads
// with SHA-256 whatever the curve).
func hashFor(crypto.PublicKey) crypto.Hash { return crypto.SHA256 }
