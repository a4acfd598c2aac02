package imagesig_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig"
	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig/imagesigtest"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

func TestLegacy(t *testing.T) {
	ctx := context.Background()
	reg := imagesigtest.Registry(t)
	k, other := imagesigtest.CosignKey(t), imagesigtest.OtherKey(t)
	tag := reg + "/mlwarden-test/legacy:v1"
	d := imagesigtest.Push(t, tag)
	imagesigtest.SignLegacy(t, k, d)

	start := time.Now()
	res, err := imagesig.Verify(ctx, tag, imagesig.Options{Key: k.Pub})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	t.Logf("verify image (legacy, key) took %v", time.Since(start))
	if res.Digest != d.DigestStr() || res.Format != "legacy" || res.Verified != 1 {
		t.Errorf("result %+v", res)
	}
	if _, err := imagesig.Verify(ctx, tag, imagesig.Options{Key: other.Pub}); !errors.Is(err, trust.ErrInvalid) {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := imagesig.Verify(ctx, tag, imagesig.Options{}); !errors.Is(err, trust.ErrIdentity) {
		t.Errorf("no trust: %v", err)
	}

	// The tag moves to an unsigned image: no signature for the new digest.
	d2 := imagesigtest.Push(t, tag)
	start = time.Now()
	if _, err := imagesig.Verify(ctx, tag, imagesig.Options{Key: k.Pub}); !errors.Is(err, trust.ErrUnsigned) {
		t.Errorf("tag moved to unsigned digest: %v", err)
	}
	t.Logf("verify unsigned took %v", time.Since(start))

	// An attacker copies the old .sig manifest onto the new digest's tag:
	// the claim names the old digest, so it must fail.
	old, _ := name.ParseReference(d.Context().Tag(strings.Replace(d.DigestStr(), ":", "-", 1) + ".sig").String())
	desc, err := remote.Get(old)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := desc.Image()
	moved := d2.Context().Tag(strings.Replace(d2.DigestStr(), ":", "-", 1) + ".sig")
	if err := remote.Write(moved, img); err != nil {
		t.Fatal(err)
	}
	if _, err := imagesig.Verify(ctx, tag, imagesig.Options{Key: k.Pub}); !errors.Is(err, trust.ErrInvalid) {
		t.Errorf(".sig copied onto another digest: %v", err)
	}
}

func TestAttestation(t *testing.T) {
	ctx := context.Background()
	reg := imagesigtest.Registry(t)
	k := imagesigtest.CosignKey(t)
	d := imagesigtest.Push(t, reg+"/mlwarden-test/att:v1")
	other := imagesigtest.Push(t, reg+"/mlwarden-test/att:other")
	imagesigtest.Attest(t, k, d, d, "https://slsa.dev/provenance/v1")
	res, err := imagesig.Verify(ctx, d.String(), imagesig.Options{Key: k.Pub, AttestationType: "slsaprovenance1"})
	if err != nil || res.Verified != 1 {
		t.Fatalf("verify attestation: %v %+v", err, res)
	}
	if _, err := imagesig.Verify(ctx, d.String(), imagesig.Options{Key: k.Pub, AttestationType: "spdxjson"}); err == nil {
		t.Error("attestation of another type accepted")
	}
	// An attestation about another image, attached to this one.
	imagesigtest.Attest(t, k, other, d, "https://example.com/predicate/v1")
	if _, err := imagesig.Verify(ctx, other.String(), imagesig.Options{Key: k.Pub, AttestationType: "https://example.com/predicate/v1"}); err == nil {
		t.Error("attestation with a subject of another digest accepted")
	}
}

func TestBundleReferrer(t *testing.T) {
	ctx := context.Background()
	reg := imagesigtest.Registry(t)
	d := imagesigtest.Push(t, reg+"/mlwarden-test/bundle:v1")
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: imagesigtest.Statement(d, imagesig.SignPredicate), PayloadType: "application/vnd.in-toto+json"}, kp, sign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := protojson.Marshal(pb)
	if err := ociremote.WriteAttestationNewBundleFormat(d, js, imagesig.SignPredicate); err != nil {
		t.Fatal(err)
	}
	res, err := imagesig.Verify(ctx, reg+"/mlwarden-test/bundle:v1", imagesig.Options{Key: kp.GetPublicKey()})
	if err != nil || res.Format != "bundle" {
		t.Fatalf("verify bundle: %v %+v", err, res)
	}
	other := imagesigtest.OtherKey(t)
	if _, err := imagesig.Verify(ctx, d.String(), imagesig.Options{Key: other.Pub}); !errors.Is(err, trust.ErrInvalid) {
		t.Errorf("wrong key: %v", err)
	}
}
