package imagesig_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	sigpayload "github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig"
	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig/imagesigtest"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// noCT is the virtual Sigstore's trusted material without CT logs: its
// test leaf certificates carry no SCT, as a private Fulcio's may not.
type noCT struct{ *ca.VirtualSigstore }

func (noCT) CTLogs() map[string]*root.TransparencyLog { return nil }

// signKeyless attaches a keyless cosign signature to d, as `cosign sign`
// writes it: the payload signed by a short-lived certificate from the
// (virtual) Fulcio, with its chain and the Rekor bundle (SET) beside it.
func signKeyless(t *testing.T, vs *ca.VirtualSigstore, identity, issuer string, d name.Digest) {
	t.Helper()
	p, err := (&sigpayload.Cosign{Image: d, ClaimedIdentity: d.Context().Name()}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	ent, err := vs.Sign(identity, issuer, p)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ent.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	vc, err := ent.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: vc.Certificate().Raw})
	var chain []byte
	for _, fca := range vs.FulcioCertificateAuthorities() {
		f := fca.(*root.FulcioCertificateAuthority)
		for _, c := range f.Intermediates {
			chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Root.Raw})...)
	}
	entries, err := ent.TlogEntries()
	if err != nil || len(entries) != 1 {
		t.Fatalf("tlog entries: %v %d", err, len(entries))
	}
	tle := entries[0].TransparencyLogEntry()
	// The entry keeps its SET unexported; sign the same payload with the
	// virtual Rekor's key, as Rekor does for the bundle cosign stores.
	payload := tlog.RekorPayload{
		Body:           base64.StdEncoding.EncodeToString(tle.GetCanonicalizedBody()),
		IntegratedTime: tle.GetIntegratedTime(),
		LogIndex:       tle.GetLogIndex(),
		LogID:          hex.EncodeToString(tle.GetLogId().GetKeyId()),
	}
	set, err := vs.RekorSignPayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	rb := &bundle.RekorBundle{
		SignedEntryTimestamp: set,
		Payload: bundle.RekorPayload{
			Body:           payload.Body,
			IntegratedTime: payload.IntegratedTime,
			LogIndex:       payload.LogIndex,
			LogID:          payload.LogID,
		},
	}
	ociSig, err := static.NewSignature(p, base64.StdEncoding.EncodeToString(sc.Signature()), static.WithCertChain(leaf, chain), static.WithBundle(rb))
	if err != nil {
		t.Fatal(err)
	}
	se, err := ociremote.SignedEntity(d)
	if err != nil {
		t.Fatal(err)
	}
	if se, err = mutate.AttachSignatureToEntity(se, ociSig); err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteSignatures(d.Repository, se); err != nil {
		t.Fatal(err)
	}
}

// TestKeyless: a keyless signature verifies only for the identity and
// issuer the policy names, offline, against the trusted root's CA and
// Rekor key.
func TestKeyless(t *testing.T) {
	ctx := context.Background()
	reg := imagesigtest.Registry(t)
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	const who, iss = "ci@example.com", "https://issuer.example.com"
	tag := reg + "/mlwarden-test/keyless:v1"
	d := imagesigtest.Push(t, tag)
	signKeyless(t, vs, who, iss, d)

	tm := noCT{vs}
	res, err := imagesig.Verify(ctx, tag, imagesig.Options{TrustedMaterial: tm, Identities: []trust.Identity{{Subject: who, Issuer: iss}}})
	if err != nil {
		t.Fatalf("verify keyless: %v", err)
	}
	if res.Digest != d.DigestStr() || res.Verified != 1 {
		t.Errorf("result %+v", res)
	}
	for _, id := range []trust.Identity{{Subject: "someone@example.com", Issuer: iss}, {Subject: who, Issuer: "https://other.example.com"}} {
		if _, err := imagesig.Verify(ctx, tag, imagesig.Options{TrustedMaterial: tm, Identities: []trust.Identity{id}}); err == nil {
			t.Errorf("identity %v: verified", id)
		}
	}
	// An empty identity list never means "anyone".
	if _, err := imagesig.Verify(ctx, tag, imagesig.Options{TrustedMaterial: tm}); !errors.Is(err, trust.ErrIdentity) {
		t.Errorf("no identities: %v", err)
	}
	// Another Sigstore's root does not vouch for this certificate.
	other, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := imagesig.Verify(ctx, tag, imagesig.Options{TrustedMaterial: noCT{other}, Identities: []trust.Identity{{Subject: who, Issuer: iss}}}); err == nil {
		t.Error("verified against an unrelated trusted root")
	}
}
