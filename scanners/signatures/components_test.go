package signatures

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig/modelsigtest"
	"github.com/mlwarden/mlwarden/scanners/source"
)

// TestVerifiedSignatureComponent: a model signature that verifies against
// the policy's key is listed for the bill of materials; one that does not
// is not.
func TestVerifiedSignatureComponent(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name string
		key  *ecdsa.PrivateKey
		want int
	}{{"trusted key", k, 1}, {"other key", other, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"models/llm/model.safetensors": strings.Repeat("w", 3000), "models/llm/config.json": "{}"})
			md := filepath.Join(dir, "models", "llm")
			res, _ := modelsigtest.Manifest(md, 0, "model.sig")
			sig, err := modelsigtest.SignKey(tc.key, modelsigtest.Statement("llm", res, 0, nil))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(md, "model.sig"), sig, 0o644)
			s, err := New(WithPolicy(Policy{Models: []ModelPolicy{{Path: "models/*", Authorities: []Authority{{Key: writeKey(t, t.TempDir(), k)}}}}}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			src, err := source.OpenFS(dir, source.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.(io.Closer).Close()
			out := scanners.NewDispatcher([]scanners.Scanner{s}).Run(context.Background(), src)
			var sigs []scanners.Component
			for _, c := range out.Components {
				if c.Kind == scanners.ComponentSignature {
					sigs = append(sigs, c)
				}
			}
			if len(sigs) != tc.want {
				t.Fatalf("signature components %+v, want %d", sigs, tc.want)
			}
			if tc.want == 1 && (sigs[0].Path != "models/llm/model.sig" || sigs[0].Subject != "models/llm" || sigs[0].Signer == "") {
				t.Errorf("component %+v", sigs[0])
			}
		})
	}
}
