package blobsig_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mlwarden/mlwarden/scanners/signatures/blobsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

func TestKeyBundle(t *testing.T) {
	blob := []byte("model weights")
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: blob}, kp, sign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(blob)
	if _, err := blobsig.VerifyBundle(js, d[:], blobsig.Trust{Key: kp.GetPublicKey()}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, err := blobsig.VerifyBundle(js, d[:], blobsig.Trust{Key: &other.PublicKey}); !errors.Is(err, trust.ErrInvalid) {
		t.Errorf("wrong key: %v", err)
	}
	d2 := sha256.Sum256([]byte("tampered"))
	if _, err := blobsig.VerifyBundle(js, d2[:], blobsig.Trust{Key: kp.GetPublicKey()}); !errors.Is(err, trust.ErrInvalid) {
		t.Errorf("tampered blob: %v", err)
	}
	if _, err := blobsig.VerifyBundle(js, d[:], blobsig.Trust{}); !errors.Is(err, trust.ErrIdentity) {
		t.Errorf("no trust: %v", err)
	}
}

func TestDetached(t *testing.T) {
	blob := []byte("a blob")
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d := sha256.Sum256(blob)
	sig, _ := ecdsa.SignASN1(rand.Reader, k, d[:])
	b64 := []byte(base64.StdEncoding.EncodeToString(sig) + "\n")
	if _, err := blobsig.VerifyDetached(b64, nil, d[:], blobsig.Trust{Key: &k.PublicKey}); err != nil {
		t.Fatal(err)
	}
	d2 := sha256.Sum256([]byte("other"))
	if _, err := blobsig.VerifyDetached(b64, nil, d2[:], blobsig.Trust{Key: &k.PublicKey}); !errors.Is(err, trust.ErrInvalid) {
		t.Errorf("tampered: %v", err)
	}
}

func TestKeyless(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	blob := []byte("weights")
	ent, err := vs.Sign("ci@example.com", "https://issuer.example", blob)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(blob)
	good := trust.Identity{Subject: "ci@example.com", Issuer: "https://issuer.example"}
	if _, err := blobsig.VerifyEntity(ent, d[:], blobsig.Trust{TrustedMaterial: vs, Identities: []trust.Identity{good}}); err != nil {
		t.Fatal(err)
	}
	re := trust.Identity{SubjectRegExp: `^ci@example\.com$`, IssuerRegExp: `^https://issuer\.example$`}
	if _, err := blobsig.VerifyEntity(ent, d[:], blobsig.Trust{TrustedMaterial: vs, Identities: []trust.Identity{re}}); err != nil {
		t.Fatal(err)
	}
	bad := trust.Identity{Subject: "mallory@example.com", Issuer: "https://issuer.example"}
	if _, err := blobsig.VerifyEntity(ent, d[:], blobsig.Trust{TrustedMaterial: vs, Identities: []trust.Identity{bad}}); !errors.Is(err, trust.ErrIdentity) {
		t.Errorf("wrong identity: %v", err)
	}
	if _, err := blobsig.VerifyEntity(ent, d[:], blobsig.Trust{TrustedMaterial: vs}); !errors.Is(err, trust.ErrIdentity) {
		t.Errorf("no identity: %v", err)
	}
	if _, err := blobsig.VerifyEntity(ent, d[:], blobsig.Trust{TrustedMaterial: vs, Identities: []trust.Identity{{Issuer: "x"}}}); err == nil {
		t.Errorf("empty subject accepted")
	}
	d2 := sha256.Sum256([]byte("tampered"))
	if _, err := blobsig.VerifyEntity(ent, d2[:], blobsig.Trust{TrustedMaterial: vs, Identities: []trust.Identity{good}}); !errors.Is(err, trust.ErrInvalid) {
		t.Errorf("tampered: %v", err)
	}
}

func FuzzVerifyBundle(f *testing.F) {
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	f.Add([]byte(`{"base64Signature":"AA==","cert":""}`))
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d := sha256.Sum256(nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = blobsig.VerifyBundle(data, d[:], blobsig.Trust{Key: &k.PublicKey})
	})
}

// TestKeyBundleTimestamped: a bundle signed with a key and carrying an
// RFC 3161 timestamp verifies with the key and a trusted root that lists
// the timestamp authority, as `cosign verify-blob --key --trusted-root`
// does; a root without that authority, or a bundle without a timestamp,
// fails.
func TestKeyBundleTimestamped(t *testing.T) {
	blob := []byte("model weights, timestamped")
	d := sha256.Sum256(blob)
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: blob}, kp, sign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	untimed, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	tsa, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tsa.TimestampResponse(pb.GetMessageSignature().GetSignature())
	if err != nil {
		t.Fatal(err)
	}
	pb.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
		Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: resp}},
	}
	timed, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	withRoot := blobsig.Trust{Key: kp.GetPublicKey(), TrustedMaterial: tsa}
	res, err := blobsig.VerifyBundle(timed, d[:], withRoot)
	if err != nil {
		t.Fatalf("timestamped keyed bundle: %v", err)
	}
	if !strings.Contains(res.Signer, "trusted root") {
		t.Errorf("signer %q", res.Signer)
	}
	// The key alone still verifies it (no time source asked for).
	if _, err := blobsig.VerifyBundle(timed, d[:], blobsig.Trust{Key: kp.GetPublicKey()}); err != nil {
		t.Errorf("key only: %v", err)
	}
	other, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		bundle []byte
		trust  blobsig.Trust
	}{
		"no timestamp":               {untimed, withRoot},
		"another root's authorities": {timed, blobsig.Trust{Key: kp.GetPublicKey(), TrustedMaterial: other}},
	} {
		if _, err := blobsig.VerifyBundle(tc.bundle, d[:], tc.trust); !errors.Is(err, trust.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}
