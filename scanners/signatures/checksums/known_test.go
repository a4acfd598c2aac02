package checksums

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"testing/fstest"
)

// digestFS is a file system that knows some files' sha256 without reading
// them (as a Hub repository's tree lists its LFS files') and counts reads.
type digestFS struct {
	fstest.MapFS
	known map[string]string
	asked []string
}

func (d *digestFS) FileDigest(name, algo string) (string, int64, bool) {
	d.asked = append(d.asked, name)
	hx, ok := d.known[name]
	if !ok || algo != "sha256" {
		return "", 0, false
	}
	return hx, int64(len(d.MapFS[name].Data)), true
}

func TestKnownDigests(t *testing.T) {
	weights := []byte("the weights, never read")
	sum := sha256.Sum256(weights)
	small := []byte("a small file, read and hashed")
	smallSum := sha256.Sum256(small)
	fsys := &digestFS{
		// The "weights" entry holds other bytes than its known digest says:
		// a digest taken from the file system is used without a read.
		MapFS: fstest.MapFS{"model.bin": {Data: []byte("other bytes")}, "small.txt": {Data: small}},
		known: map[string]string{"model.bin": hex.EncodeToString(sum[:])},
	}
	h := NewHasher(fsys)
	res := h.Verify(context.Background(), ".", []Entry{
		{Name: "model.bin", Algorithm: "sha256", Digest: hex.EncodeToString(sum[:])},
		{Name: "small.txt", Algorithm: "sha256", Digest: hex.EncodeToString(smallSum[:])},
		{Name: "model.bin", Algorithm: "sha512", Digest: "00"},
	})
	if res[0].Status != OK || res[1].Status != OK {
		t.Fatalf("results %+v", res)
	}
	if res[2].Status != Mismatch {
		t.Errorf("sha512, which the file system does not know, is read: %+v", res[2])
	}
	// Only small.txt and the sha512 of model.bin were read.
	if got, want := h.BytesRead(), int64(len(small)+len("other bytes")); got != want {
		t.Errorf("read %d bytes, want %d", got, want)
	}
	// Without the interface, the file is read: the mismatch shows.
	plain := NewHasher(fsys.MapFS).Verify(context.Background(), ".", []Entry{{Name: "model.bin", Algorithm: "sha256", Digest: hex.EncodeToString(sum[:])}})
	if plain[0].Status != Mismatch {
		t.Errorf("a plain file system: %+v", plain[0])
	}
}
