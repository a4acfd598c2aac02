//go:build !mlwarden_sbatch

package cli

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestVerifyBlobKeyedBundleWithTimestamp: `mlwarden verify blob FILE
// --bundle B --key PUB --trusted-root ROOT` checks the bundle's RFC 3161
// timestamp against the root's timestamp authorities, as cosign does,
// without asking for a keyless identity; a root that does not list the
// authority fails the check (exit 1).
func TestVerifyBlobKeyedBundleWithTimestamp(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "w.safetensors")
	blob := []byte("weights with a timestamp")
	os.WriteFile(file, blob, 0o644)
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: blob}, kp, sign.BundleOptions{})
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
	js, _ := protojson.Marshal(pb)
	bundle := filepath.Join(dir, "w.safetensors.sigstore.json")
	os.WriteFile(bundle, js, 0o644)
	pubPEM, err := kp.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "cosign.pub")
	os.WriteFile(key, []byte(pubPEM), 0o644)
	writeRoot := func(name string, tsas []root.TimestampingAuthority) string {
		tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, tsas, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		return p
	}
	good := writeRoot("trusted_root.json", tsa.TimestampingAuthorities())
	other, _ := ca.NewVirtualSigstore()
	bad := writeRoot("other_root.json", other.TimestampingAuthorities())

	code, out := verifyRun(t, "blob", file, "--bundle", bundle, "--key", key, "--trusted-root", good)
	if code != 0 || !strings.Contains(out, "trusted root") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if code, out := verifyRun(t, "blob", file, "--bundle", bundle, "--key", key, "--trusted-root", bad); code != 1 {
		t.Errorf("a root without the timestamp authority: exit %d: %s", code, out)
	}
	d := sha256.Sum256([]byte("tampered"))
	os.WriteFile(file, d[:], 0o644)
	if code, out := verifyRun(t, "blob", file, "--bundle", bundle, "--key", key, "--trusted-root", good); code != 1 {
		t.Errorf("tampered: exit %d: %s", code, out)
	}
}
