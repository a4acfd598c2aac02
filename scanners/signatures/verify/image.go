package verify

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig"
)

// ImageOptions says how to verify an image, and against what.
type ImageOptions struct {
	Trust TrustFiles
	// AttestationType, when set, verifies an in-toto attestation of this
	// predicate type (a URI or a cosign name: slsaprovenance1, spdxjson, ...)
	// whose subject is the image, instead of a signature.
	AttestationType string
	// Remote are the registry client options (auth, transport, user agent).
	Remote []remote.Option
	// NameOptions say how ref is parsed (name.Insecure for plain HTTP).
	NameOptions []name.Option
}

// Image verifies the cosign signatures (legacy .sig tags or Sigstore-bundle
// referrers) of ref, bound to the digest ref resolves to, with a public key
// or keyless. Only the registry in ref is contacted, never TUF or Rekor.
func Image(ctx context.Context, ref string, o ImageOptions) (*Report, error) {
	t, err := o.Trust.CosignTrust()
	if err != nil {
		return nil, err
	}
	rep := &Report{Command: "image", Target: ref}
	res, err := imagesig.Verify(ctx, ref, imagesig.Options{
		Key: t.Key, TrustedMaterial: t.TrustedMaterial, Identities: t.Identities,
		AttestationType: o.AttestationType, Remote: o.Remote, NameOptions: o.NameOptions,
	})
	if res != nil {
		rep.Digest, rep.Format, rep.Signer, rep.Checked = res.Digest, res.Format, res.Signer, res.Verified
	}
	return finish(rep, err)
}
