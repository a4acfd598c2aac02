// Package image is the image source: registry:REF, oci:DIR and
// docker-archive:FILE targets pulled with go-containerregistry and walked
// layer by layer, top first, so that whiteouts and deleted files are known
// (deleted files are still scanned and marked), with a per-layer result
// cache keyed by the layer's diff ID and the rules version.
package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
)

// Image schemes Open accepts.
const (
	SchemeRegistry      = "registry"
	SchemeOCI           = "oci"
	SchemeDockerArchive = "docker-archive"
)

// ConfigPath is the Path of the artifact that holds an image's raw config
// JSON (Kind scanners.ArtifactImageConfig). With Options.Platform "all"
// the platform is added: "/.image-config.json@linux/arm64".
const ConfigPath = "/.image-config.json"

// PlatformAll scans every image of a multi-platform index.
const PlatformAll = "all"

// Defaults for Options' bounds.
const (
	DefaultMaxLayerBytes = 16 << 30
	DefaultMaxEntries    = 1_000_000
)

// Options configures the image source (registry:, oci:, docker-archive:).
type Options struct {
	// Platform selects one image of a multi-platform index: "os/arch[/variant]",
	// "" for the host's architecture on linux, or "all" to scan every platform.
	Platform string
	// Insecure lists registry hosts (host or host:port) reached over plain
	// HTTP (--insecure-registry). Loopback registries always are.
	Insecure []string
	// Keychain resolves registry credentials (default authn.DefaultKeychain:
	// the docker config and its credential helpers). When it fails, the pull
	// falls back to anonymous.
	Keychain authn.Keychain
	// MaxLayerBytes bounds the decompressed bytes read from one layer
	// (default DefaultMaxLayerBytes); MaxEntries bounds its tar entries
	// (default DefaultMaxEntries). A layer over either bound is an error for
	// that layer; the files read before it are still scanned.
	MaxLayerBytes int64
	MaxEntries    int
	// DownloadLimit bounds the bytes downloaded for one OCI model artifact
	// (ModelPack, KitOps, Docker model, ORAS; see model.go), whose raw and
	// uncompressed tar layers are read in ranges, only where the checks
	// read them (default DefaultDownloadLimit; negative: no bound).
	// Container images are not bound by it.
	DownloadLimit int64
	// NetworkTimeout bounds each registry request: connecting, the TLS
	// handshake, the response headers, any read of a body that gets
	// nothing, and a body that sends less than 1 KiB in that much waiting
	// (default DefaultNetworkTimeout; negative: go-containerregistry's
	// defaults, which wait forever for an answer). See transport.go.
	NetworkTimeout time.Duration
	// Dial, when set, opens every connection to a registry instead of a
	// net.Dialer, still bounded by NetworkTimeout: `mlwarden serve` passes
	// its registry guard, which refuses loopback, private, link-local and
	// metadata addresses after DNS (server/guard.go).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Concurrency bounds how many files are handed to the sink at once and
	// how many layers are fetched ahead (default GOMAXPROCS).
	Concurrency int
	// RulesVersion names everything that decides findings (mlwarden version,
	// rules data, enabled checks, config). It keys the per-layer cache, which
	// is used only when it is set.
	RulesVersion string
	// NoCache bypasses the per-layer cache. Cache is where it is kept
	// (scanners/cache: a directory, or a Redis server runners share); when
	// it is nil, a directory: CacheDir (default
	// os.UserCacheDir()/mlwarden/cache).
	NoCache  bool
	Cache    *cache.Cache
	CacheDir string
	// CacheMaxBytes and CacheMaxAge bound the cache (defaults
	// DefaultCacheMaxBytes and DefaultCacheMaxAge): after a scan, entries
	// unused for longer than the age go, then the least recently used until
	// the cache fits, in every rules version's directory (an upgrade leaves
	// the old one behind). A negative value turns that bound off.
	CacheMaxBytes int64
	CacheMaxAge   time.Duration

	// spillBytes is the ring a layer fetched ahead is decompressed into
	// (default imgSpillBytes; negative: in memory, imgPrefetchBuffer).
	// Tests make it small, so that the ring wraps.
	spillBytes int64
}

// The cache's default bounds.
const (
	DefaultCacheMaxBytes = 2 << 30
	DefaultCacheMaxAge   = 30 * 24 * time.Hour
)

func (o Options) withDefaults() Options {
	if o.MaxLayerBytes <= 0 {
		o.MaxLayerBytes = DefaultMaxLayerBytes
	}
	if o.DownloadLimit == 0 {
		o.DownloadLimit = DefaultDownloadLimit
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Concurrency <= 0 {
		o.Concurrency = runtime.GOMAXPROCS(0)
	}
	if o.Keychain == nil {
		o.Keychain = authn.DefaultKeychain
	}
	if o.CacheMaxBytes == 0 {
		o.CacheMaxBytes = DefaultCacheMaxBytes
	}
	if o.CacheMaxAge == 0 {
		o.CacheMaxAge = DefaultCacheMaxAge
	}
	if o.NetworkTimeout == 0 {
		o.NetworkTimeout = DefaultNetworkTimeout
	}
	if o.spillBytes == 0 {
		o.spillBytes = defaultSpill(runtime.GOMAXPROCS(0))
	}
	return o
}

// defaultSpill is the ring a layer fetched ahead spills into, for a process
// with procs cores: none (an 8 MiB pipe in memory) on two or fewer. The
// layer being walked already keeps two cores busy (inflate, the blob's and
// the diff ID's hashes, the walk and its checks), so a layer decompressed
// ahead only moves work to later and pays for the ring's write and read:
// issue 21's layout, all checks, 10 runs in turn on two cores: 2.81 s wall
// and 5.08 s CPU with the ring, 2.56 s and 4.77 s without (secrets alone
// 1.98 s and 1.79 s; the image path alone, with no check to keep the cores
// busy, 1.23 s and 1.39 s). With more cores the ring uses the ones the
// layer being walked leaves free.
func defaultSpill(procs int) int64 {
	if procs <= 2 {
		return -1
	}
	return imgSpillBytes
}

// Open opens an image target. scheme is "registry", "oci" or
// "docker-archive"; ref is the reference, the layout directory or the
// archive file. It checks the reference and that a local path exists; the
// registry is first contacted by Walk, so that a failure is reported with
// the target.
func Open(ctx context.Context, scheme, ref string, o Options) (scanners.Source, error) {
	o = o.withDefaults()
	s := &imgSource{scheme: scheme, ref: ref, opts: o}
	// The name is the reference as given; a layout directory or an archive
	// keeps its scheme so that it does not read as a directory target.
	tname := ref
	if scheme != SchemeRegistry {
		tname = scheme + ":" + ref
	}
	s.target = scanners.Target{Name: tname, Kind: scanners.KindImage}
	if o.Platform != "" && o.Platform != PlatformAll {
		p, err := v1.ParsePlatform(o.Platform)
		if err == nil && (p.OS == "" || p.Architecture == "") {
			err = errors.New("want os/arch[/variant], e.g. linux/amd64, or all")
		}
		if err != nil {
			return nil, fmt.Errorf("image %s: bad platform %q: %w", s.target.Name, o.Platform, err)
		}
		s.platform = p
	} else {
		s.platform = &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
		if runtime.GOARCH == "arm64" {
			s.platform.Variant = "v8"
		}
	}
	switch scheme {
	case SchemeRegistry:
		r, err := imgParseRef(ref, o.Insecure)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.target.Name, err)
		}
		s.nameRef = r
	case SchemeOCI, SchemeDockerArchive:
		fi, err := os.Stat(ref)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.target.Name, err)
		}
		if scheme == SchemeOCI && !fi.IsDir() {
			return nil, fmt.Errorf("image %s: an OCI image layout is a directory", s.target.Name)
		}
		if scheme == SchemeDockerArchive && fi.IsDir() {
			return nil, fmt.Errorf("image %s: a docker archive is a file (docker save -o FILE)", s.target.Name)
		}
	default:
		return nil, fmt.Errorf("image %s: unknown image scheme %q (registry, oci, docker-archive)", ref, scheme)
	}
	return s, nil
}

// imgParseRef parses an image reference; hosts listed in insecure are
// reached over plain HTTP.
func imgParseRef(ref string, insecure []string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("bad image reference: %w", err)
	}
	host := r.Context().RegistryStr()
	if slices.ContainsFunc(insecure, func(h string) bool {
		return h == host || strings.TrimSuffix(h, "/") == host
	}) {
		return name.ParseReference(ref, name.Insecure)
	}
	return r, nil
}

type imgSource struct {
	scheme   string
	ref      string
	opts     Options
	nameRef  name.Reference
	platform *v1.Platform

	mu     sync.Mutex
	target scanners.Target
}

func (s *imgSource) Target() scanners.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.target
	t.Notes = slices.Clone(t.Notes)
	return t
}

func (s *imgSource) setDigest(d string) {
	s.mu.Lock()
	s.target.Digest = d
	s.mu.Unlock()
}

func (s *imgSource) addNote(n string) {
	s.mu.Lock()
	s.target.Notes = append(s.target.Notes, n)
	s.mu.Unlock()
}

// imgPlatformImage is one image to scan, with the platform it was picked for
// or, in a docker archive of several images, its tag ("" when the target is
// a single image).
type imgPlatformImage struct {
	platform string
	img      v1.Image
	// all: one of several platforms scanned, named in the config's path.
	all bool
}

// imgPartialError is a resolve error after which the images found are
// still scanned.
type imgPartialError struct{ error }

func (e *imgPartialError) Unwrap() error { return e.error }

func (s *imgSource) Walk(ctx context.Context, sink scanners.Sink) error {
	imgs, err := s.resolve(ctx)
	var partial *imgPartialError
	if err != nil && !errors.As(err, &partial) {
		return err
	}
	w := &imgWalker{src: s, sink: sink, opts: s.opts}
	w.cache = newImgCache(s.opts)
	defer w.cache.done(time.Now())
	w.progress = newImgProgress(ctx) // the run's progress (scanners.ProgressOf)
	defer w.progress.stop()
	var errs []error
	if partial != nil {
		errs = append(errs, partial.error)
	}
	for _, pi := range imgs {
		if err := w.image(ctx, pi); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resolve fetches the manifest (or index) and picks the images to scan.
func (s *imgSource) resolve(ctx context.Context) ([]imgPlatformImage, error) {
	switch s.scheme {
	case SchemeRegistry:
		opts := []remote.Option{
			remote.WithContext(ctx),
			remote.WithAuthFromKeychain(imgFallbackKeychain{s.opts.Keychain}),
			remote.WithUserAgent("mlwarden"),
		}
		opts = append(opts, imgRemoteOptions(s.opts.NetworkTimeout, s.opts.Dial)...)
		desc, err := remote.Get(s.nameRef, opts...)
		if err != nil {
			return nil, imgRegistryError(s.nameRef.Context().RegistryStr(), err)
		}
		s.setDigest(desc.Digest.String())
		if desc.MediaType.IsIndex() {
			idx, err := desc.ImageIndex()
			if err != nil {
				return nil, fmt.Errorf("read index: %w", err)
			}
			return s.pick(idx)
		}
		img, err := desc.Image()
		if err != nil {
			return nil, imgRegistryError(s.nameRef.Context().RegistryStr(), err)
		}
		return []imgPlatformImage{{img: img}}, nil
	case SchemeOCI:
		p, err := layout.FromPath(s.ref)
		if err != nil {
			return nil, fmt.Errorf("read OCI layout: %w", err)
		}
		idx, err := p.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("read OCI layout index: %w", err)
		}
		return s.pick(idx)
	case SchemeDockerArchive:
		opener := func() (io.ReadCloser, error) { return os.Open(s.ref) }
		m, err := tarball.LoadManifest(opener)
		if err != nil {
			return nil, fmt.Errorf("read docker archive: %w", err)
		}
		if len(m) > 1 {
			return s.archiveImages(opener, m)
		}
		img, err := tarball.Image(opener, nil)
		if err != nil {
			return nil, fmt.Errorf("read docker archive: %w", err)
		}
		// docker save has no registry manifest (and an uncompressed
		// archive's would have to be computed by compressing every layer):
		// the image ID, the config digest, names it as `docker images` does.
		d, err := img.ConfigName()
		if err != nil {
			return nil, fmt.Errorf("read docker archive config: %w", err)
		}
		s.setDigest(d.String())
		return []imgPlatformImage{{img: img}}, nil
	}
	return nil, fmt.Errorf("unknown image scheme %q", s.scheme)
}

// archiveImages returns every image of a docker archive holding several
// (docker save a b), each named in findings by its first tag. go-container
// registry selects an archive's image by tag only, so an untagged image
// among several cannot be read: it is noted, and the run fails (exit 2)
// rather than pass it over silently.
func (s *imgSource) archiveImages(opener tarball.Opener, m tarball.Manifest) ([]imgPlatformImage, error) {
	var out []imgPlatformImage
	var untagged []string
	for i, d := range m {
		if len(d.RepoTags) == 0 {
			untagged = append(untagged, fmt.Sprintf("image %d (config %s)", i+1, d.Config))
			continue
		}
		tag, err := name.NewTag(d.RepoTags[0])
		if err != nil {
			return nil, fmt.Errorf("read docker archive: image %d: tag %q: %w", i+1, d.RepoTags[0], err)
		}
		img, err := tarball.Image(opener, &tag)
		if err != nil {
			return nil, fmt.Errorf("read docker archive: %s: %w", d.RepoTags[0], err)
		}
		out = append(out, imgPlatformImage{platform: d.RepoTags[0], img: img, all: true})
	}
	s.addNote(fmt.Sprintf("docker archive with %d images; findings in an image's config are named config.json@TAG", len(m)))
	if len(untagged) > 0 {
		return out, &imgPartialError{fmt.Errorf("read docker archive: %s untagged among several images: not scanned (save images by name:tag)", strings.Join(untagged, ", "))}
	}
	return out, nil
}

// pick walks an index (and nested indexes) and returns the images for the
// wanted platform, or all of them.
func (s *imgSource) pick(idx v1.ImageIndex) ([]imgPlatformImage, error) {
	type cand struct {
		plat v1.Platform
		desc v1.Descriptor
		img  v1.Image
	}
	var cands []cand
	var walk func(idx v1.ImageIndex, depth int) error
	walk = func(idx v1.ImageIndex, depth int) error {
		if depth > 4 {
			return errors.New("index nesting deeper than 4")
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return fmt.Errorf("read index manifest: %w", err)
		}
		for _, d := range im.Manifests {
			switch {
			case d.MediaType.IsIndex():
				child, err := idx.ImageIndex(d.Digest)
				if err != nil {
					return fmt.Errorf("read index %s: %w", d.Digest, err)
				}
				if err := walk(child, depth+1); err != nil {
					return err
				}
			case d.MediaType.IsImage():
				img, err := idx.Image(d.Digest)
				if err != nil {
					return fmt.Errorf("read image %s: %w", d.Digest, err)
				}
				var p v1.Platform
				if d.Platform != nil {
					p = *d.Platform
				} else if cf, err := img.ConfigFile(); err == nil {
					p = v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
				}
				// Build attestations (buildkit) are not runnable images.
				if p.OS == "unknown" || d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
					continue
				}
				cands = append(cands, cand{plat: p, desc: d, img: img})
			}
		}
		return nil
	}
	if err := walk(idx, 0); err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, errors.New("no image in the index")
	}
	multi := len(cands) > 1
	var out []imgPlatformImage
	var avail []string
	for _, c := range cands {
		ps := c.plat.String()
		avail = append(avail, ps)
		switch {
		case s.opts.Platform == PlatformAll:
		case !multi && s.opts.Platform == "":
			// A single image: take it whatever its platform.
		case c.plat.Satisfies(*s.platform) || (s.platform.Variant == "v8" && c.plat.OS == s.platform.OS && c.plat.Architecture == s.platform.Architecture && c.plat.Variant == ""):
		default:
			continue
		}
		pi := imgPlatformImage{img: c.img}
		if multi {
			pi.platform = ps
			pi.all = s.opts.Platform == PlatformAll
			s.addNote(fmt.Sprintf("platform %s: image %s", ps, c.desc.Digest))
		}
		out = append(out, pi)
		if s.opts.Platform != PlatformAll {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no image for platform %s in the index (it has: %s; use --platform or --platform all)", s.platform, strings.Join(avail, ", "))
	}
	if s.Target().Digest == "" {
		// A layout: the digest of what its index.json names, when it names
		// one thing (an image or an index); else of index.json itself.
		d, err := idx.Digest()
		if im, ierr := idx.IndexManifest(); ierr == nil && len(im.Manifests) == 1 {
			d, err = im.Manifests[0].Digest, nil
		}
		if err == nil {
			s.setDigest(d.String())
		}
	}
	return out, nil
}

// imgFallbackKeychain resolves credentials with its keychain and falls back
// to anonymous pull when that fails (a broken credential helper must not stop
// a public pull).
type imgFallbackKeychain struct{ kc authn.Keychain }

func (k imgFallbackKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	a, err := k.kc.Resolve(r)
	if err != nil || a == nil {
		return authn.Anonymous, nil
	}
	return a, nil
}
