package signatures

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// TestConformance runs the checks every scanner passes on the model and
// demo fixtures and on a target with a checksum manifest (a right digest, a
// wrong one and a missing file), a model signature and a blob signature
// that are not what they claim.
func TestConformance(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("alpha"))
	const tg = "manifests"
	seeds := []scannertest.Seed{
		{Target: tg, Path: "w/a.bin", Data: []byte("alpha")},
		{Target: tg, Path: "w/b.bin", Data: []byte("bravo")},
		{Target: tg, Path: "w/SHA256SUMS", Data: []byte(hex.EncodeToString(sum[:]) + "  a.bin\n" + hex.EncodeToString(sum[:]) + "  b.bin\n" + hex.EncodeToString(sum[:]) + "  gone.bin\nnot a line\n")},
		{Target: tg, Path: "w/model.sig", Data: []byte(`{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}`)},
		{Target: tg, Path: "w/a.bin.sig", Data: []byte("MEUCIQ==")},
		{Target: tg, Path: "w/a.bin.sigstore.json", Data: []byte("{")},
	}
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/models/benign")...)
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	scannertest.Conformance(t, s, seeds...)
}
