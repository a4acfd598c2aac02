package signatures

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

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
