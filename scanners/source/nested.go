package source

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
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
// images/app.tar!/.image-config.json for the config).
//
// The image's view is one reader of the layout or the archive, not all of
// it: a scanned directory is untrusted, and whatever else it holds is
// scanned too (issue 37). In a layout, every file but the blobs the image
// walk scanned (the configs and layers of the images it picked) is walked
// as a plain file of the directory: files beside the blobs, blobs no index
// names, other platforms' blobs, index.json and the manifests. In an
// archive, every regular member but the configs and layers the image walk
// read is handed to the sink as a file named ARCHIVE!member (no leading
// slash: images/app.tar!evil.pkl, not a path in the image), so that a
// pickle or a nested archive there goes through every check. The image
// source's notes (the platform picked, a model artifact's downloads) are
// the directory target's, prefixed with where the image is.

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
		where := "the OCI image layout"
		if rel != "" {
			where = rel
		}
		for _, n := range src.Target().Notes {
			s.addNote(where + ": " + n)
		}
	}
	if err != nil && ctx.Err() == nil {
		sink.Error(scanners.Error{Target: s.name, Path: relOrDot(rel), Message: fmt.Sprintf("image in the directory: %v", err)})
	}
}

// layoutScanned returns the files of the OCI layout at dir (absolute
// paths) that its image walk scans, which the directory walk leaves to
// it. When the layout cannot be read, none: the image walk reports the
// error and every file is scanned as a plain file.
func (s *fsSource) layoutScanned(ctx context.Context, dir string) map[string]bool {
	b, _ := image.ReadLayoutBlobs(ctx, dir, s.image)
	set := b.Scanned
	root := s.layoutRefs && dir == s.root
	if root {
		set = b.Referenced // an oci: target: every blob its index reaches is the image's
	}
	out := make(map[string]bool, len(set))
	for p := range set {
		out[filepath.Join(dir, filepath.FromSlash(p))] = true
	}
	if root {
		out[filepath.Join(dir, "index.json")] = true
		out[filepath.Join(dir, "oci-layout")] = true
	}
	return out
}

// archiveRest hands the members of the docker archive f (at abs, named rel
// in the target) that its image walk did not read to sink, as files named
// rel!member. Directories, links and special members have no content.
func (s *fsSource) archiveRest(ctx context.Context, sink scanners.Sink, f *os.File, abs, rel string) {
	read, _ := image.ArchiveScanned(abs) // an error: the image walk's too; every member is scanned
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("read the archive's other members: %v", errMsg(err))})
		return
	}
	limit := s.image.MaxEntries
	if limit <= 0 {
		limit = image.DefaultMaxEntries
	}
	kind := s.kind()
	tr := tar.NewReader(f)
	var extra []string
	for i := 0; ; i++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("read the archive's other members: %v (members after it not scanned)", err)})
			break
		}
		if ctx.Err() != nil {
			return
		}
		if i >= limit {
			sink.Error(scanners.Error{Target: s.name, Path: rel, Message: fmt.Sprintf("more than %d members: the rest were not scanned", limit)})
			break
		}
		if read[i] || !regularMember(h) {
			continue
		}
		name := memberName(h.Name)
		extra = append(extra, name)
		a := &scanners.Artifact{
			Kind:       scanners.ArtifactFile,
			Target:     s.name,
			TargetKind: kind,
			Path:       rel + "!" + name,
			Size:       h.Size,
			Mode:       h.FileInfo().Mode(),
		}
		if err := sink.Artifact(a, tr); err != nil {
			if ctx.Err() == nil {
				sink.Error(scanners.Error{Target: s.name, Path: a.Path, Message: err.Error()})
			}
			return
		}
	}
	if s.archiveNote && len(extra) > 0 {
		s.addNote(fmt.Sprintf("docker archive: %d member(s) besides its images' configs and layers were scanned as plain files, named %s!MEMBER: %s", len(extra), rel, shortList(extra)))
	}
}

// regularMember reports a tar member with content.
func regularMember(h *tar.Header) bool {
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeCont, tar.TypeGNUSparse:
		return true
	}
	return false
}

// memberName is a member's name as the archive expander shows one: slash
// separated, cleaned, never absolute.
func memberName(n string) string {
	return strings.TrimPrefix(path.Clean("/"+strings.ReplaceAll(n, "\\", "/")), "/")
}

// shortList names at most five of names.
func shortList(names []string) string {
	shown := names[:min(len(names), 5)]
	more := ""
	if len(names) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return strings.Join(shown, ", ") + more
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
