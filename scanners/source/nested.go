package source

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// Images found inside a directory.
//
// An OCI image layout (a directory holding oci-layout and index.json) or a
// `docker save` archive (a tar with manifest.json) in a scanned tree is an
// image: its blobs are compressed layer tars, whose files only make sense
// layer by layer — a file deleted by a whiteout in a later layer is still
// in the image, and a layer's config holds ENV and history. Read as opaque
// blobs, or member by member as plain archives, they would be scanned
// without those facts. So the file-system source walks each as the image
// source walks an oci: or docker-archive: target, and hands its files to
// the same sink, named LAYOUT!/path/in/image (images/app.tar!/etc/app.env,
// images/app.tar!/.image-config.json for the config). The layout's own
// files (blobs, index.json) are not scanned again.

// isOCILayout reports whether a directory's entries make it an OCI image
// layout.
func isOCILayout(entries []os.DirEntry) bool {
	var layout, index bool
	for _, e := range entries {
		switch {
		case e.Name() == "oci-layout" && e.Type().IsRegular():
			layout = true
		case e.Name() == "index.json" && e.Type().IsRegular():
			index = true
		}
	}
	return layout && index
}

// isDockerArchive reports whether a .tar file is a `docker save` archive:
// its manifest.json lists images (tar members are skipped by seeking, not
// read).
func isDockerArchive(abs string, size int64) bool {
	if !strings.EqualFold(filepath.Ext(abs), ".tar") || size < 1024 {
		return false
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(abs) })
	return err == nil && len(m) > 0
}

// walkImage walks the image at abs (scheme oci or docker-archive) into sink,
// its files named rel!path (the image's own paths when the target's root is
// the layout). What cannot be read is an error for rel.
func (s *fsSource) walkImage(ctx context.Context, sink scanners.Sink, scheme, abs, rel string) {
	o := s.image
	o.NoCache = true // files of a directory target: not cached by layer
	src, err := image.Open(ctx, scheme, abs, o)
	if err == nil {
		err = src.Walk(ctx, &nestedSink{Sink: sink, target: s.name, prefix: rel})
	}
	if err != nil && ctx.Err() == nil {
		sink.Error(scanners.Error{Target: s.name, Path: relOrDot(rel), Message: fmt.Sprintf("image in the directory: %v", err)})
	}
}

// nestedSink names an inner image's artifacts and errors inside the
// directory target.
type nestedSink struct {
	scanners.Sink
	target, prefix string
}

func (n *nestedSink) Artifact(a *scanners.Artifact, r io.Reader) error {
	b := *a
	b.Target = n.target
	if n.prefix != "" {
		b.Path = n.prefix + "!" + a.Path
	}
	return n.Sink.Artifact(&b, r)
}

func (n *nestedSink) Error(e scanners.Error) {
	switch {
	case n.prefix == "":
	case e.Path != "":
		e.Path = n.prefix + "!" + e.Path
	default:
		e.Path = n.prefix
	}
	e.Target = n.target
	n.Sink.Error(e)
}
