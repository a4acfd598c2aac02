//go:build !mlwarden_sbatch

package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/mlwarden/mlwarden/scanners/signatures"
	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig/imagesigtest"
	"github.com/mlwarden/mlwarden/server"
)

// TestAdmissionSignaturePolicy: with a signature policy, a digest signed by
// the policy's key is admitted and an unsigned one is denied, against a
// real registry on loopback and a real cosign signature.
func TestAdmissionSignaturePolicy(t *testing.T) {
	reg := startRegistry(t, "", "")
	key := imagesigtest.CosignKey(t)
	signed := imagesigtest.Push(t, reg+"/ml/signed:1")
	imagesigtest.SignLegacy(t, key, signed)
	unsigned := imagesigtest.Push(t, reg+"/ml/unsigned:1")

	pem, err := cryptoutils.MarshalPublicKeyToPEM(key.Pub)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(keyFile, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.Signatures = server.Deny
	cfg.SignaturePolicy = signatures.Policy{Images: []signatures.ImagePolicy{{Glob: "**", Authorities: []signatures.Authority{{Key: keyFile}}}}}
	sigs, err := signatures.New(signatures.WithPolicy(cfg.SignaturePolicy), signatures.WithNameOptions(name.Insecure))
	if err != nil {
		t.Fatal(err)
	}
	defer sigs.Close()
	_, hs := startServer(t, server.WithConfig(cfg), server.WithScanner(newCounting()), server.WithSignatureVerifier(server.ImagePolicyVerifier{Policy: sigs}))

	k := workloadKinds[0]
	for i, c := range []struct {
		image   name.Digest
		allowed bool
	}{{signed, true}, {unsigned, false}} {
		obj := object(t, k.file, c.image.String(), signed.String(), "ml")
		r := admit(t, hs.URL, reviewJSON(t, "sig-"+string(rune('a'+i)), k.kind, k.group, k.resource, "CREATE", "ml", obj, false))
		if r.Allowed != c.allowed {
			t.Errorf("%s: allowed=%v, want %v (%s)", c.image, r.Allowed, c.allowed, message(r))
		}
		if !c.allowed && (r.Result == nil || !strings.Contains(r.Result.Message, "signature")) {
			t.Errorf("%s: denial does not say why: %+v", c.image, r.Result)
		}
	}
}
