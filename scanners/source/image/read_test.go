//go:build !mlwarden_sbatch

package image

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

// TestResolveMember: a member is found as go-containerregistry's tarball
// finds it: the first of its cleaned name, through links.
func TestResolveMember(t *testing.T) {
	hdrs := []member{
		{name: "a/layer.tar", typeflag: tar.TypeReg},
		{name: "a/layer.tar", typeflag: tar.TypeReg}, // a second of the name: never read
		{name: "b/link.tar", typeflag: tar.TypeSymlink, linkname: "../a/layer.tar"},
		{name: "loop", typeflag: tar.TypeSymlink, linkname: "loop"},
	}
	for _, tc := range []struct {
		p    string
		want int
	}{{"a/layer.tar", 0}, {"./a//layer.tar", 0}, {"b/link.tar", 0}, {"loop", -1}, {"missing", -1}} {
		if got := resolveMember(hdrs, tc.p, map[string]bool{}); got != tc.want {
			t.Errorf("%s: member %d, want %d", tc.p, got, tc.want)
		}
	}
}

// TestReadBlobsAndMembers: the blobs and members an image walk scans, and
// not what was put beside them.
func TestReadBlobsAndMembers(t *testing.T) {
	dir := t.TempDir()
	unlinked, err := hostile.OCILayoutBeside(filepath.Join(dir, "oci"), hostile.Token(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadLayoutBlobs(context.Background(), filepath.Join(dir, "oci"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// One image: its config and one layer scanned; its manifest referenced too.
	if len(b.Scanned) != 2 || len(b.Referenced) != 3 || b.Scanned[unlinked] || b.Referenced[unlinked] {
		t.Errorf("layout blobs %+v (unlinked %s)", b, unlinked)
	}
	for p := range b.Scanned {
		if !b.Referenced[p] {
			t.Errorf("%s scanned, not referenced", p)
		}
	}
	plat := filepath.Join(dir, "platforms")
	if err := hostile.OCILayoutPlatforms(plat, runtime.GOARCH, hostile.Token(2)); err != nil {
		t.Fatal(err)
	}
	if b, err = ReadLayoutBlobs(context.Background(), plat, Options{}); err != nil || len(b.Scanned) != 2 || len(b.Referenced) != 6 {
		t.Errorf("two platforms: %+v, %v", b, err)
	}

	file := filepath.Join(dir, "app.tar")
	dup, err := hostile.DockerArchiveBeside(file, hostile.Token(3))
	if err != nil {
		t.Fatal(err)
	}
	read, err := ArchiveScanned(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var names []string
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if read[i] {
			names = append(names, h.Name)
		}
	}
	// The config and the first member of the layer's name, not the second.
	if len(names) != 2 || names[1] != dup && names[0] != dup {
		t.Errorf("members read %v (layer %s)", names, dup)
	}
}
