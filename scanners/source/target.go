package source

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
	"github.com/mlwarden/mlwarden/scanners/source/image"
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
}

// Schemes are the target prefixes Open understands, as in syft and grype.
var Schemes = []string{"registry", "oci", "docker-archive", "git", "hf", "dir", "file"}

// Open turns one target argument into a source: a path, or a scheme-prefixed
// reference (registry:REF, oci:DIR, docker-archive:FILE, git:URL-or-PATH,
// hf:ORG/NAME[@REVISION], dir:PATH, file:PATH). A path inside a Hugging
// Face cache (a snapshot, a repository's folder, a cache root) is scanned
// as the repository at the snapshot's commit (hf.OpenCache). A bare
// argument that is not an existing path and parses as an image reference
// is treated as registry:.
func Open(ctx context.Context, target string, o Options) (scanners.Source, error) {
	if target == "" {
		return nil, fmt.Errorf("empty target")
	}
	if scheme, rest, ok := strings.Cut(target, ":"); ok {
		switch scheme {
		case "registry", "oci", "docker-archive":
			if rest == "" {
				return nil, fmt.Errorf("target %q: nothing after %q", target, scheme+":")
			}
			return image.Open(ctx, scheme, rest, o.Image)
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
