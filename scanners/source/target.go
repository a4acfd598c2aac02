package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/scanners/source/k8s"
)

// Options configures every kind of source.
type Options struct {
	// MaxFileSize is the largest file a filesystem source scans (default
	// DefaultMaxFileSize); a larger one is reported as an error.
	MaxFileSize int64
	// Workers bounds how many files are read at once (default: the CPUs, at most 8).
	Workers int
	Image   image.Options
	Git     GitOptions
	// HF configures hf: targets (the Hub's endpoint, token, download limit).
	HF hf.Options
	// Scope narrows git: targets and directories in a work tree to a
	// change (--since-commit, --staged, the base of --new-only).
	Scope Scope
	// K8s configures k8s: targets (the kubeconfig); their images are
	// opened with Image.
	K8s k8s.Options
}

// Schemes are the target prefixes Open understands, as in syft and grype.
var Schemes = []string{"registry", "oci", "docker-archive", "git", "hf", "k8s", "dir", "file"}

// Open turns one target argument into a source: a path, or a scheme-prefixed
// reference (registry:REF, oci:DIR, docker-archive:FILE, git:URL-or-PATH,
// hf:ORG/NAME[@REVISION], k8s:[CONTEXT][/NAMESPACE], dir:PATH, file:PATH). A path inside a Hugging
// Face cache (a snapshot, a repository's folder, a cache root) is scanned
// as the repository at the snapshot's commit (hf.OpenCache). A bare
// argument that is not an existing path and parses as an image reference
// is treated as registry:.
func Open(ctx context.Context, target string, o Options) (scanners.Source, error) {
	if target == "" {
		return nil, fmt.Errorf("empty target")
	}
	if !o.Scope.Empty() {
		return openScope(ctx, target, o)
	}
	if scheme, rest, ok := strings.Cut(target, ":"); ok {
		switch scheme {
		case "registry", "oci", "docker-archive":
			if rest == "" {
				return nil, fmt.Errorf("target %q: nothing after %q", target, scheme+":")
			}
			src, err := image.Open(ctx, scheme, rest, o.Image)
			if err != nil || scheme == image.SchemeRegistry {
				return src, err
			}
			return withLocalFiles(src, scheme, rest, o)
		case "git":
			if rest == "" {
				return nil, fmt.Errorf("target %q: nothing after \"git:\"", target)
			}
			return OpenGit(ctx, rest, o.Git)
		case hf.Scheme:
			if rest == "" {
				return nil, fmt.Errorf("target %q: nothing after \"hf:\" (hf:ORG/NAME[@REVISION])", target)
			}
			return hf.Open(ctx, rest, o.HF)
		case k8s.Scheme:
			ko := o.K8s
			ko.Image = o.Image
			src, err := k8s.Open(ctx, rest, ko)
			if err != nil {
				return nil, err
			}
			return src, nil
		case "dir", "file":
			return openPath(rest, o)
		}
	}
	if _, err := os.Lstat(target); err == nil {
		return openPath(target, o)
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("open target %s: %w", target, err)
	}
	if looksLikeImage(target) {
		return image.Open(ctx, "registry", target, o.Image)
	}
	return nil, fmt.Errorf("target %s: no such file or directory, and not an image reference (use a path, or one of %s followed by ':')", target, strings.Join(Schemes, ", "))
}

// openScope opens a target for a Scope: git: targets and directories in a
// git work tree only.
func openScope(ctx context.Context, target string, o Options) (scanners.Source, error) {
	flag := scopeFlag(o.Scope)
	scheme, rest, ok := strings.Cut(target, ":")
	switch {
	case ok && scheme == "git":
		if o.Scope.Staged {
			return nil, fmt.Errorf("target %s: --staged reads a work tree's index: name the directory (.) rather than a git: target", target)
		}
		if rest == "" {
			return nil, fmt.Errorf("target %q: nothing after \"git:\"", target)
		}
		o.Git.Since, o.Git.At = o.Scope.Since, o.Scope.At
		return OpenGit(ctx, rest, o.Git)
	case ok && scheme == "dir":
		return openScoped(ctx, rest, o)
	case ok && slices.Contains(Schemes, scheme):
		return nil, fmt.Errorf("target %s: %s applies to git: targets and to directories in a git work tree", target, flag)
	}
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		return openScoped(ctx, target, o)
	}
	return nil, fmt.Errorf("target %s: %s applies to git: targets and to directories in a git work tree", target, flag)
}

// openPath opens a file or directory: a Hugging Face cache path as the
// repository it holds, anything else with the file-system source.
func openPath(p string, o Options) (scanners.Source, error) {
	if hf.IsCache(p) {
		return hf.OpenCache(p, hf.CacheOptions{MaxFileSize: o.MaxFileSize, Workers: o.Workers})
	}
	return OpenFS(p, o)
}

// looksLikeImage reports whether a bare argument is meant as an image
// reference: it must parse with an explicit tag or digest, so that a mistyped
// path such as "modles" is not sent to a registry.
func looksLikeImage(s string) bool {
	_, err := name.ParseReference(s, name.StrictValidation)
	return err == nil
}

// An oci:DIR or docker-archive:FILE target is the image the user asked
// for, walked by the image source; but the layout's directory or the
// archive may hold more than that image, and whatever is there travels
// with it (a layout is copied or tarred as a directory, an archive is
// untarred). So the rest is scanned too, as plain files of the target
// (see docs/design/sources.md): in a layout, every file its index.json
// does not reach (files beside the blobs, blobs no manifest names) — the
// other platforms' blobs are the image's, chosen by --platform; in an
// archive, every member but the configs and layers the image walk read
// (manifest.json, anything else put in the tar), named FILE!member. A note
// names them.

// withLocalFiles returns img with the rest of its layout or archive.
func withLocalFiles(img scanners.Source, scheme, ref string, o Options) (scanners.Source, error) {
	fsrc, err := OpenFS(ref, o)
	if err != nil {
		return nil, err
	}
	f := fsrc.(*fsSource)
	f.name = img.Target().Name
	switch scheme {
	case image.SchemeOCI:
		f.layoutRefs = true
	case image.SchemeDockerArchive:
		f.archiveOnly, f.archiveNote = true, true
	}
	return &imageFiles{img: img, files: f}, nil
}

// imageFiles is an image target and the other files of its layout or
// archive.
type imageFiles struct {
	img   scanners.Source
	files *fsSource

	mu    sync.Mutex
	other []string // a layout's files scanned beside its image, in order
	seen  map[string]bool
}

func (s *imageFiles) Target() scanners.Target {
	t := s.img.Target()
	t.Notes = append(t.Notes, s.files.Target().Notes...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.other) > 0 {
		slices.Sort(s.other)
		t.Notes = append(t.Notes, fmt.Sprintf("OCI layout: %d file(s) that its index.json does not reach were scanned as plain files, not as part of the image: %s", len(s.other), shortList(s.other)))
	}
	return t
}

func (s *imageFiles) Walk(ctx context.Context, sink scanners.Sink) error {
	err := s.img.Walk(ctx, sink)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.files.layoutRefs {
		sink = &otherFiles{Sink: sink, s: s}
	}
	return errors.Join(err, s.files.Walk(ctx, sink))
}

// otherFiles records the files of a layout's directory walk, for the
// target's note (an image found in it by one name).
type otherFiles struct {
	scanners.Sink
	s *imageFiles
}

func (o *otherFiles) Artifact(a *scanners.Artifact, r io.Reader) error {
	p, _, _ := strings.Cut(a.Path, "!")
	o.s.mu.Lock()
	if !o.s.seen[p] {
		if o.s.seen == nil {
			o.s.seen = map[string]bool{}
		}
		o.s.seen[p] = true
		o.s.other = append(o.s.other, p)
	}
	o.s.mu.Unlock()
	return o.Sink.Artifact(a, r)
}

func (s *imageFiles) Close() error {
	var err error
	if c, ok := s.img.(io.Closer); ok {
		err = c.Close()
	}
	return errors.Join(err, s.files.Close())
}
