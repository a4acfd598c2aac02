package blobsig_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"

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
