package modelsig_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig/modelsigtest"
)

// The upstream vectors: signatures written by released model_signing
// versions, copied from sigstore/model-transparency scripts/tests (see
// testdata/upstream/README.md).
const upstreamDir = "testdata/upstream"

// The signer of the upstream keyless vectors, as its Fulcio certificates say
// and upstream's test-verify scripts pass.
const (
	upstreamIdentity = "stefanb@us.ibm.com"
	upstreamIssuer   = "https://sigstore.verify.ibm.com/oauth2"
)

type upstreamVector struct {
	dir    string          // directory under testdata/upstream
	method modelsig.Method // how it was signed
	model  string          // what was signed, relative to dir: "." or one file
	// tampered is the name the report gives a modified signme-1: its signed
	// resource name ("." when the model is the file itself).
	tampered string
}

var upstreamVectors = []upstreamVector{
	{"v0.2.0-certificate", modelsig.MethodCertificate, ".", "signme-1"},
	{"v0.3.1-certificate", modelsig.MethodCertificate, ".", "signme-1"},
	{"v0.3.1-elliptic-key", modelsig.MethodKey, "signme-1", "."},
	{"v0.3.1-sigstore", modelsig.MethodSigstore, ".", "signme-1"},
	{"v1.0.0-certificate", modelsig.MethodCertificate, ".", "signme-1"},
	{"v1.0.0-elliptic-key", modelsig.MethodKey, "signme-1", "."},
	{"v1.0.0-sigstore", modelsig.MethodSigstore, ".", "signme-1"},
	{"v1.0.1-certificate", modelsig.MethodCertificate, ".", "signme-1"},
	{"v1.0.1-elliptic-key", modelsig.MethodKey, ".", "signme-1"},
	{"v1.0.1-sigstore", modelsig.MethodSigstore, ".", "signme-1"},
	{"v1.1.0-certificate", modelsig.MethodCertificate, ".", "signme-1"},
	{"v1.1.0-elliptic-key", modelsig.MethodKey, ".", "signme-1"},
	{"v1.1.0-sigstore", modelsig.MethodSigstore, ".", "signme-1"},
}

// upstreamOptions are the options of upstream's verify commands: they pass
// --ignore-paths <vector>/ignore-me.
var upstreamOptions = modelsig.Options{IgnorePaths: []string{"ignore-me"}}

func readPEM(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(upstreamDir, name))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s: no PEM block", name)
	}
	return b.Bytes
}

// upstreamTrust returns the trust upstream verifies each method with, and a
// wrong one of the same kind.
func upstreamTrust(t *testing.T) (good, bad map[modelsig.Method]modelsig.Trust) {
	t.Helper()
	pub, err := x509.ParsePKIXPublicKey(readPEM(t, "keys/certificate/signing-key-pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	key, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		t.Fatalf("signing-key-pub.pem holds a %T", pub)
	}
	// Upstream verifies with the root CA (ca-cert.pem), which no bundle
	// carries and which we do not have; every certificate given is an anchor,
	// so the intermediate CA the bundles carry pins the chain instead.
	intCA, err := x509.ParseCertificate(readPEM(t, "keys/certificate/int-ca-cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := root.NewTrustedRootFromPath(filepath.Join(upstreamDir, "trusted_root.json"))
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	otherCA, err := modelsigtest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	good = map[modelsig.Method]modelsig.Trust{
		modelsig.MethodKey:         {Key: key},
		modelsig.MethodCertificate: {Chain: []*x509.Certificate{intCA}},
		modelsig.MethodSigstore:    {TrustedMaterial: tr, Identity: upstreamIdentity, OIDCIssuer: upstreamIssuer},
	}
	bad = map[modelsig.Method]modelsig.Trust{
		modelsig.MethodKey:         {Key: &otherKey.PublicKey},
		modelsig.MethodCertificate: {Chain: []*x509.Certificate{otherCA.Root}},
		modelsig.MethodSigstore:    {TrustedMaterial: tr, Identity: "mallory@example.com", OIDCIssuer: upstreamIssuer},
	}
	return good, bad
}

// copyDir copies the regular files of a vector directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestUpstreamVectors verifies the signatures model_signing v0.2.0 to
// v1.1.0 wrote, as upstream's test-sign-verify-allversions.sh does, then
// checks that a changed file, a wrong key or CA and a wrong identity fail.
func TestUpstreamVectors(t *testing.T) {
	good, bad := upstreamTrust(t)
	for _, v := range upstreamVectors {
		t.Run(v.dir, func(t *testing.T) {
			dir := filepath.Join(upstreamDir, v.dir)
			sig, err := os.ReadFile(filepath.Join(dir, "model.sig"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := modelsig.ParseSignature(sig)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if s.Method != v.method {
				t.Fatalf("method %s, want %s", s.Method, v.method)
			}
			// Fulcio certificates live ten minutes: these expired in 2025 and
			// verify only at the transparency log's integrated time.
			if v.method == modelsig.MethodSigstore && !s.Chain[0].NotAfter.Before(time.Now()) {
				t.Fatalf("certificate valid until %v: the vector no longer shows that verification uses the log's time", s.Chain[0].NotAfter)
			}

			rep, err := verifyModel(t, dir, v.model, sig, good[v.method], upstreamOptions)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if !rep.OK() || rep.Files == 0 || rep.Method != v.method {
				t.Fatalf("verify: report %+v %+v", rep, rep.Result)
			}

			// One byte of signme-1 changed: the signature still verifies,
			// the file is reported as modified. The ignored path beside it
			// is not reported.
			tmp := copyDir(t, dir)
			if err := os.WriteFile(filepath.Join(tmp, "ignore-me"), []byte("ignore"), 0o644); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(tmp, "signme-1")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data[0] ^= 0x20
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err = verifyModel(t, tmp, v.model, sig, good[v.method], upstreamOptions)
			if err != nil {
				t.Fatalf("tampered model: %v", err)
			}
			if rep.OK() || !slices.Equal(rep.Modified, []string{v.tampered}) || len(rep.Extra)+len(rep.Missing) != 0 {
				t.Errorf("tampered model: report %+v, want %q modified", rep.Result, v.tampered)
			}

			// The wrong key, CA or identity. An ECDSA signature cannot tell
			// another key from a changed payload, so a key bundle without
			// a hint (before v1.1) says ErrInvalid; the rest say ErrIdentity.
			_, err = verifyModel(t, dir, v.model, sig, bad[v.method], upstreamOptions)
			if !errors.Is(err, modelsig.ErrIdentity) && !(v.method == modelsig.MethodKey && s.KeyHint == "" && errors.Is(err, modelsig.ErrInvalid)) {
				t.Errorf("wrong trust: err %v, want ErrIdentity", err)
			}
			if v.method == modelsig.MethodSigstore {
				vs, err := ca.NewVirtualSigstore()
				if err != nil {
					t.Fatal(err)
				}
				other := modelsig.Trust{TrustedMaterial: vs, Identity: upstreamIdentity, OIDCIssuer: upstreamIssuer}
				if _, err := verifyModel(t, dir, v.model, sig, other, upstreamOptions); !errors.Is(err, modelsig.ErrInvalid) {
					t.Errorf("other trusted root: err %v, want ErrInvalid", err)
				}
				wrongIssuer := good[v.method]
				wrongIssuer.OIDCIssuer = "https://token.actions.githubusercontent.com"
				if _, err := verifyModel(t, dir, v.model, sig, wrongIssuer, upstreamOptions); !errors.Is(err, modelsig.ErrIdentity) {
					t.Errorf("wrong issuer: err %v, want ErrIdentity", err)
				}
			}
		})
	}
}

// TestUpstreamMLDSA: model_signing v1.1.0 signs with ML-DSA-65 too, which
// is not supported here; it must say so, never pass.
func TestUpstreamMLDSA(t *testing.T) {
	good, _ := upstreamTrust(t)
	dir := filepath.Join(upstreamDir, "v1.1.0-ml-dsa")
	sig, err := os.ReadFile(filepath.Join(dir, "model.sig"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tr := range map[string]modelsig.Trust{"ecdsa key": good[modelsig.MethodKey], "no key": {}} {
		rep, err := verifyModel(t, dir, ".", sig, tr, upstreamOptions)
		if !errors.Is(err, modelsig.ErrUnsupported) {
			t.Errorf("%s: report %+v, err %v, want ErrUnsupported", name, rep, err)
		}
	}
}
