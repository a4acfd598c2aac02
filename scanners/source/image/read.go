package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// What an image walk reads of a local image, so that a source walking the
// directory or file that holds it (scanners/source) scans everything else
// there as plain files: an image's view of a layout or an archive is one
// reader of it, not all of its bytes.

// LayoutBlobs names blobs of an OCI image layout by their path in it
// (blobs/ALG/HEX, slash-separated).
type LayoutBlobs struct {
	// Scanned are the blobs whose content a walk of the layout with the
	// same Options scans: the configs and layers of the images it picks
	// (--platform).
	Scanned map[string]bool
	// Referenced are every blob the layout's index.json reaches: indexes,
	// manifests, the configs and layers of every image (every platform),
	// Scanned included.
	Referenced map[string]bool
}

// blobPath is where a layout keeps a blob.
func blobPath(h v1.Hash) string { return path.Join("blobs", h.Algorithm, h.Hex) }

// ReadLayoutBlobs says which blobs of the OCI layout at dir an image walk
// with o reads, and which its index reaches. On an error it returns what
// it found before it (the walk reports the same error): a caller scans
// what is in neither set as plain files, so less is the safe side.
func ReadLayoutBlobs(ctx context.Context, dir string, o Options) (LayoutBlobs, error) {
	out := LayoutBlobs{Scanned: map[string]bool{}, Referenced: map[string]bool{}}
	p, err := layout.FromPath(dir)
	if err != nil {
		return out, fmt.Errorf("read OCI layout: %w", err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return out, fmt.Errorf("read OCI layout index: %w", err)
	}
	if err := referenced(idx, out.Referenced, 0); err != nil {
		return out, err
	}
	src, err := Open(ctx, SchemeOCI, dir, o)
	if err != nil {
		return out, err
	}
	imgs, err := src.(*imgSource).resolve(ctx)
	if err != nil {
		return out, err
	}
	for _, pi := range imgs {
		m, err := pi.img.Manifest()
		if err != nil {
			return out, fmt.Errorf("read manifest: %w", err)
		}
		out.Scanned[blobPath(m.Config.Digest)] = true
		for _, l := range m.Layers {
			out.Scanned[blobPath(l.Digest)] = true
		}
	}
	return out, nil
}

// referenced adds every blob idx reaches to into (nesting bounded as pick
// bounds it).
func referenced(idx v1.ImageIndex, into map[string]bool, depth int) error {
	if depth > 4 {
		return errors.New("index nesting deeper than 4")
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("read index manifest: %w", err)
	}
	for _, d := range im.Manifests {
		into[blobPath(d.Digest)] = true
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return fmt.Errorf("read index %s: %w", d.Digest, err)
			}
			if err := referenced(child, into, depth+1); err != nil {
				return err
			}
		case d.MediaType.IsImage():
			img, err := idx.Image(d.Digest)
			if err != nil {
				return fmt.Errorf("read image %s: %w", d.Digest, err)
			}
			m, err := img.Manifest()
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", d.Digest, err)
			}
			into[blobPath(m.Config.Digest)] = true
			for _, l := range m.Layers {
				into[blobPath(l.Digest)] = true
			}
		}
	}
	return nil
}

// ArchiveScanned returns the members of the docker archive at file whose
// content an image walk of it scans, by position (0-based, in the tar's
// order): the config and layers of each image it reads (the only image,
// or every tagged one of several), found as go-containerregistry finds
// them — the first member of the name, through links. On an error it
// returns what it found before it (the walk reports the same error).
func ArchiveScanned(file string) (map[int]bool, error) {
	out := map[int]bool{}
	opener := func() (io.ReadCloser, error) { return os.Open(file) }
	m, err := tarball.LoadManifest(opener)
	if err != nil {
		return out, fmt.Errorf("read docker archive: %w", err)
	}
	var read []tarball.Descriptor
	switch {
	case len(m) == 1:
		read = m[:1]
	default:
		for _, d := range m {
			if len(d.RepoTags) == 0 {
				continue // not read: the walk says so
			}
			tag, err := name.NewTag(d.RepoTags[0])
			if err != nil {
				return out, fmt.Errorf("read docker archive: tag %q: %w", d.RepoTags[0], err)
			}
			if sel := findTagged(m, tag); sel != nil {
				read = append(read, *sel)
			}
		}
	}
	hdrs, err := archiveHeaders(file)
	if err != nil {
		return out, err
	}
	for _, d := range read {
		for _, p := range append([]string{d.Config}, d.Layers...) {
			if i := resolveMember(hdrs, p, map[string]bool{}); i >= 0 {
				out[i] = true
			}
		}
	}
	return out, nil
}

// findTagged is tarball's choice of an image by tag: the first whose tags
// name it.
func findTagged(m tarball.Manifest, tag name.Tag) *tarball.Descriptor {
	for i := range m {
		for _, s := range m[i].RepoTags {
			if t, err := name.NewTag(s); err == nil && t.Name() == tag.Name() {
				return &m[i]
			}
		}
	}
	return nil
}

// member is one tar header, as resolveMember needs it.
type member struct {
	name     string // path.Clean'd
	typeflag byte
	linkname string
}

func archiveHeaders(file string) ([]member, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []member
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read docker archive: %w", err)
		}
		out = append(out, member{name: path.Clean(h.Name), typeflag: h.Typeflag, linkname: h.Linkname})
	}
}

// resolveMember is go-containerregistry's tarball lookup of a member
// (followLinks): the first header of the cleaned name; a symlink or hard
// link is followed from the name's directory. -1: none.
func resolveMember(hdrs []member, p string, visited map[string]bool) int {
	if visited[p] {
		return -1
	}
	visited[p] = true
	want := path.Clean(p)
	for i, h := range hdrs {
		if h.name != want {
			continue
		}
		if h.typeflag == tar.TypeSymlink || h.typeflag == tar.TypeLink {
			return resolveMember(hdrs, path.Join(path.Dir(p), path.Clean(h.linkname)), visited)
		}
		return i
	}
	return -1
}
