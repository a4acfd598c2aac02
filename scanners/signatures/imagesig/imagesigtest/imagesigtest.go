// Package imagesigtest pushes images to a loopback registry and signs them
// with cosign's libraries (keys from cosign.GenerateKeyPair, tlog upload
// off), for tests of image signature verification.
package imagesigtest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	sigpayload "github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/mlwarden/mlwarden/internal/registrytest"
)

// Registry returns a registry host: MLWARDEN_TEST_REGISTRY (the Debian
// docker-registry .ci/registry.sh starts), or outside CI
// go-containerregistry's in-process registry on 127.0.0.1 (see
// registrytest.Any).
func Registry(t testing.TB) string {
	t.Helper()
	return registrytest.Any(t)
}

// Key is a signing key and its public key.
type Key struct {
	SV  signature.SignerVerifier
	Pub crypto.PublicKey
}

var (
	cosignKeyOnce sync.Once
	cosignKey     Key
)

// CosignKey returns a key pair made by cosign.GenerateKeyPair (scrypt-encrypted
// as cosign.key, so slow: made once).
func CosignKey(t testing.TB) Key {
	t.Helper()
	cosignKeyOnce.Do(func() { cosignKey = genCosignKey(t) })
	if cosignKey.SV == nil {
		t.Fatal("no cosign key")
	}
	return cosignKey
}

// OtherKey is a key that signed nothing.
func OtherKey(t testing.TB) Key {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, _ := signature.LoadECDSASignerVerifier(k, crypto.SHA256)
	return Key{sv, &k.PublicKey}
}

func genCosignKey(t testing.TB) Key {
	pass := []byte("test")
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return pass, nil })
	if err != nil {
		t.Fatal(err)
	}
	sv, err := cosign.LoadPrivateKey(kb.PrivateBytes, pass, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(kb.PublicBytes)
	if err != nil {
		t.Fatal(err)
	}
	return Key{sv, pub}
}

// Push writes a random image to ref and returns its digest.
func Push(t testing.TB, ref string) name.Digest {
	t.Helper()
	h := registrytest.PushRandom(t, ref)
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r.Context().Digest(h.String())
}

// SignLegacy writes a cosign .sig signature for d, as `cosign sign
// --tlog-upload=false` does.
func SignLegacy(t testing.TB, k Key, d name.Digest) {
	t.Helper()
	p, err := (&sigpayload.Cosign{Image: d, ClaimedIdentity: d.Context().Name()}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := k.SV.SignMessage(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	ociSig, err := static.NewSignature(p, base64.StdEncoding.EncodeToString(sig))
	if err != nil {
		t.Fatal(err)
	}
	se, err := ociremote.SignedEntity(d)
	if err != nil {
		t.Fatal(err)
	}
	se, err = mutate.AttachSignatureToEntity(se, ociSig)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteSignatures(d.Repository, se); err != nil {
		t.Fatal(err)
	}
}

// Statement is an in-toto statement about subject.
func Statement(subject name.Digest, predicateType string) []byte {
	hx := strings.TrimPrefix(subject.DigestStr(), "sha256:")
	b, _ := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"predicateType": predicateType,
		"subject":       []any{map[string]any{"name": subject.Context().Name(), "digest": map[string]string{"sha256": hx}}},
		"predicate":     map[string]any{"builder": "test"},
	})
	return b
}

// Attest attaches an in-toto attestation about subject to d.
func Attest(t testing.TB, k Key, d, subject name.Digest, predicateType string) {
	t.Helper()
	env, err := dsse.WrapSigner(k.SV, "application/vnd.in-toto+json").SignMessage(bytes.NewReader(Statement(subject, predicateType)))
	if err != nil {
		t.Fatal(err)
	}
	att, err := static.NewAttestation(env)
	if err != nil {
		t.Fatal(err)
	}
	se, _ := ociremote.SignedEntity(d)
	se, err = mutate.AttachAttestationToEntity(se, att)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteAttestations(d.Repository, se); err != nil {
		t.Fatal(err)
	}
}
