package source

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/scanners"
)

// nestedCollect keeps the artifacts a walk hands over.
type nestedCollect struct {
	mu    sync.Mutex
	files map[string]*scanners.Artifact
	errs  []scanners.Error
}

func (c *nestedCollect) Artifact(a *scanners.Artifact, r io.Reader) error {
	io.Copy(io.Discard, r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		c.files = map[string]*scanners.Artifact{}
	}
	b := *a
	c.files[a.Path] = &b
	return nil
}

func (c *nestedCollect) Error(e scanners.Error) {
	c.mu.Lock()
	c.errs = append(c.errs, e)
	c.mu.Unlock()
}

func layerOf(t *testing.T, files map[string]string) v1.Layer {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg})
		w.Write([]byte(files[n]))
	}
	w.Close()
	data := b.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestImagesInDirectory: an OCI layout and a docker save archive inside a
// scanned directory are walked as images — layers, the config, a file a
// later layer deleted marked as such — not as blobs or plain archives.
func TestImagesInDirectory(t *testing.T) {
	img, err := mutate.AppendLayers(empty.Image,
		layerOf(t, map[string]string{"app/.env": "TOKEN=x\n", "app/main.py": "print(1)\n"}),
		layerOf(t, map[string]string{"app/.wh..env": ""}))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	p, err := layout.Write(filepath.Join(root, "images", "oci"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("example.com/app:1")
	if err := tarball.WriteToFile(filepath.Join(root, "images", "app.tar"), tag, img); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "README.md"), []byte("hi\n"), 0o644)

	src, err := OpenFS(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.(io.Closer).Close()
	c := &nestedCollect{}
	if err := src.Walk(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if len(c.errs) != 0 {
		t.Fatalf("errors %+v", c.errs)
	}
	for _, prefix := range []string{"images/oci", "images/app.tar"} {
		env := c.files[prefix+"!/app/.env"]
		if env == nil || env.TargetKind != scanners.KindImage || env.Layer == "" || !strings.Contains(env.Note, "deleted") || env.Target != root {
			t.Errorf("%s: .env %+v", prefix, env)
		}
		if c.files[prefix+"!/app/main.py"] == nil || c.files[prefix+"!"+"/.image-config.json"] == nil {
			t.Errorf("%s: files %v", prefix, keysOf(c.files))
		}
	}
	for p := range c.files {
		if strings.Contains(p, "blobs/") || p == "images/app.tar" || p == "images/oci/index.json" {
			t.Errorf("image read as plain files: %s", p)
		}
	}
	if c.files["README.md"] == nil {
		t.Error("the rest of the tree not walked")
	}
}

func keysOf(m map[string]*scanners.Artifact) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
