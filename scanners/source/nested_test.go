package source

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
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

	"github.com/mlwarden/mlwarden/internal/hostile"
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
		if p == "images/app.tar" || slices.Contains(imageBlobs(t, filepath.Join(root, "images", "oci")), strings.TrimPrefix(p, "images/oci/")) {
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

// imageBlobs are the config and layer blobs of the images of the layout at
// dir (blobs/sha256/HEX): what its image walk scans.
func imageBlobs(t *testing.T, dir string) []string {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "blobs/sha256/"+m.Config.Digest.Hex)
		for _, l := range m.Layers {
			out = append(out, "blobs/sha256/"+l.Digest.Hex)
		}
	}
	return out
}

// TestHiddenBesideImages: what an OCI layout's directory or a docker save
// archive holds besides its image — files beside the blobs, a blob no
// manifest names, members its manifest.json does not name, a second
// member of a layer's name — is scanned as plain files, in a directory,
// as the target itself and as an oci: or docker-archive: target; the
// image's own blobs are scanned once, as the image (issue 37, item 20).
func TestHiddenBesideImages(t *testing.T) {
	token := hostile.Token(37)
	root := t.TempDir()
	layoutDir := filepath.Join(root, "tree", "images", "oci")
	unlinked, err := hostile.OCILayoutBeside(layoutDir, token)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(root, "tree", "images", "app.tar")
	dupLayer, err := hostile.DockerArchiveBeside(archive, token)
	if err != nil {
		t.Fatal(err)
	}
	blobs := imageBlobs(t, layoutDir)
	layoutHidden := []string{"evil.pkl", "sub/creds.env", unlinked}
	archiveHidden := []string{"evil.pkl", "creds.env", dupLayer}

	for _, tc := range []struct {
		name, target string
		open         func(string) (scanners.Source, error)
		prefix       string   // the image's name in the target ("" : the target)
		sep          string   // between prefix and a hidden file's name
		hidden       []string // files of the layout or members of the archive
		plain        []string // files besides them scanned as plain files
		note         string
	}{
		{name: "layout in a directory", target: filepath.Join(root, "tree"), prefix: "images/oci", sep: "/", hidden: layoutHidden, plain: []string{"images/oci/index.json"}},
		{name: "directory is the layout", target: layoutDir, hidden: layoutHidden, plain: []string{"index.json", "oci-layout"}},
		{name: "oci: target", target: "oci:" + layoutDir, hidden: layoutHidden, note: "OCI layout: 3 file(s) that its index.json does not reach were scanned as plain files"},
		{name: "archive in a directory", target: filepath.Join(root, "tree"), prefix: "images/app.tar", sep: "!", hidden: archiveHidden, plain: []string{"images/app.tar!manifest.json"}},
		{name: "file is the archive", target: archive, prefix: "app.tar", sep: "!", hidden: archiveHidden, plain: []string{"app.tar!manifest.json"}},
		{name: "docker-archive: target", target: "docker-archive:" + archive, prefix: "app.tar", sep: "!", hidden: archiveHidden, note: "docker archive: 4 member(s) besides its images' configs and layers were scanned as plain files, named app.tar!MEMBER: manifest.json, evil.pkl, creds.env, " + dupLayer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Open(context.Background(), tc.target, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := src.(io.Closer); ok {
				defer c.Close()
			}
			c := &nestedCollect{}
			if err := src.Walk(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if len(c.errs) != 0 {
				t.Fatalf("errors %+v", c.errs)
			}
			in := func(n string) string {
				if tc.prefix == "" {
					return n
				}
				return tc.prefix + tc.sep + n
			}
			for _, h := range append(slices.Clone(tc.hidden), tc.plain...) {
				p := h
				if !slices.Contains(tc.plain, h) {
					p = in(h)
				}
				a := c.files[p]
				if a == nil {
					t.Errorf("%s not scanned; scanned: %v", p, keysOf(c.files))
					continue
				}
				if a.Kind != scanners.ArtifactFile || a.TargetKind == scanners.KindImage || a.Layer != "" {
					t.Errorf("%s: not a plain file: %+v", p, a)
				}
			}
			if h := tc.hidden[len(tc.hidden)-1]; h == dupLayer && c.files[in(h)] != nil && c.files[in(h)].Size != int64(len("HF_TOKEN=")+len(token)+1) {
				t.Errorf("%s: the layer read as a plain member, not the second member of its name: %+v", in(h), c.files[in(h)])
			}
			image := "/app/main.py"
			if tc.prefix != "" && !strings.HasPrefix(tc.target, "docker-archive:") {
				image = tc.prefix + "!" + image // the image's files named inside the directory's
			}
			if a := c.files[image]; a == nil || a.TargetKind != scanners.KindImage || a.Layer == "" {
				t.Errorf("the image not walked: %s %+v; scanned: %v", image, a, keysOf(c.files))
			}
			for p := range c.files {
				for _, b := range blobs {
					if strings.HasSuffix(p, b) {
						t.Errorf("an image blob read as a plain file: %s", p)
					}
				}
			}
			if notes := strings.Join(src.Target().Notes, "\n"); !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
		})
	}
}

// TestOtherPlatformsInDirectory: a layout in a scanned directory is walked
// as the image of the host's platform; the other platforms' blobs are the
// directory's files all the same, scanned as plain files (a layer as the
// archive it is), and the image's notes say which image was walked.
func TestOtherPlatformsInDirectory(t *testing.T) {
	root := t.TempDir()
	if err := hostile.OCILayoutPlatforms(filepath.Join(root, "oci"), runtime.GOARCH, hostile.Token(7)); err != nil {
		t.Fatal(err)
	}
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
	if c.files["oci!/app/main.py"] == nil {
		t.Errorf("the host's image not walked: %v", keysOf(c.files))
	}
	p, err := layout.FromPath(filepath.Join(root, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := p.ImageIndex()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.Architecture != "s390x" {
			continue
		}
		img, _ := idx.Image(d.Digest)
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []string{"oci/blobs/sha256/" + m.Layers[0].Digest.Hex, "oci/blobs/sha256/" + m.Config.Digest.Hex} {
			if a := c.files[b]; a == nil || a.TargetKind != scanners.KindDir {
				t.Errorf("the other platform's blob %s not scanned as a plain file: %v", b, keysOf(c.files))
			}
		}
	}
	if notes := strings.Join(src.Target().Notes, "\n"); !strings.Contains(notes, "oci: platform linux/"+runtime.GOARCH) {
		t.Errorf("notes %q: the image's platform note is not the directory's", notes)
	}
}
