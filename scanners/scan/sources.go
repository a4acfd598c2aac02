//go:build !mlwarden_sbatch

package scan

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/source"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/scanners/source/k8s"
)

// The targets a user names — paths, images, repositories, Hub models — and
// the result cache. The sbatch hook's build (mlwarden-sbatch) checks only
// scripts held in memory and has stand-ins (sources_sbatch.go).

type (
	cacheOptions  = cache.Options
	imageOptions  = image.Options
	gitOptions    = source.GitOptions
	hfOptions     = hf.Options
	k8sOptions    = k8s.Options
	authenticator = authn.Authenticator
	resultCache   = *cache.Cache
)

const defaultMaxFileSize = source.DefaultMaxFileSize

// sourceOptionsFrom reads the image, cache and Hub settings into o.
func sourceOptionsFrom(v *config.Values, o *Options) {
	str := func(name string) string {
		if !v.Has(name) {
			return ""
		}
		return v.String(name)
	}
	o.Image = image.Options{Platform: str("platform")}
	if v.Has("insecure-registry") {
		o.Image.Insecure = v.List("insecure-registry")
	}
	if v.Has("no-cache") {
		o.Image.NoCache = v.Bool("no-cache")
	}
	if o.NewOnly != "" {
		// --new-only compares secrets by their value's key, which a
		// finding replayed from the cache no longer holds: both scans
		// are cold, so that both sides compare alike.
		o.Image.NoCache = true
	}
	if v.Has("cache-max-size") {
		o.Image.CacheMaxBytes = v.Size("cache-max-size")
		if o.Image.CacheMaxBytes == 0 {
			o.Image.CacheMaxBytes = -1 // no bound
		}
		o.Cache.MaxBytes = o.Image.CacheMaxBytes
	}
	o.CacheBackend = str("cache-backend")
	o.Cache.Dir = str("cache-dir")
	if v.Has("cache-ttl") {
		if o.Cache.TTL = v.Duration("cache-ttl"); o.Cache.TTL == 0 {
			o.Cache.TTL = -1 // forever
		}
	}
	if v.Has("download-limit") {
		n := v.Size("download-limit")
		if n == 0 {
			n = -1 // no limit
		}
		o.HF.DownloadLimit, o.Image.DownloadLimit = n, n
	}
	o.HF.Endpoint = str("hf-endpoint")
	o.K8s.Kubeconfig = str("kubeconfig")
	if v.Has("network-timeout") {
		d := v.Duration("network-timeout")
		if d == 0 {
			d = -1 // no bound
		}
		o.Image.NetworkTimeout, o.HF.NetworkTimeout = d, d
	}
}

// configTargets are the targets whose directory may hold the config file:
// not a Hugging Face cache, which holds a model author's files (its
// snapshot's .mlwarden.yaml must not configure, or suppress, the scan of
// it).
func configTargets(targets []string) []string {
	return slices.DeleteFunc(slices.Clone(targets), hf.IsCache)
}

// openSources opens the result cache and completes the sources' options
// with the pipeline's.
func (s *Scanner) openSources() error {
	if s.o.Image.RulesVersion == "" {
		s.o.Image.RulesVersion = s.RulesVersion()
	}
	if s.o.Image.Cache == nil && !s.o.Image.NoCache {
		co := s.o.Cache
		co.Warn = s.o.Warn
		if co.MaxBytes == 0 {
			co.MaxBytes = s.o.Image.CacheMaxBytes
		}
		if co.Dir == "" {
			co.Dir = s.o.Image.CacheDir
		}
		c, err := cache.Open(s.o.CacheBackend, co)
		switch {
		case err == nil:
			s.cache, s.o.Image.Cache = c, c
		case s.o.CacheBackend != "" && s.o.CacheBackend != cache.BackendFS:
			return fmt.Errorf("--cache-backend: %w", err)
		default:
			s.o.Image.NoCache = true // no directory for it (no $HOME): scans are cold
		}
	}
	if s.o.VerifySecrets {
		// Cached layer and Hub-file results keep no secret, so their
		// findings could not be verified: with --verify-secrets layers
		// and Hub files are scanned again (the answers are cached).
		s.o.Image.NoCache = true
	}
	// Hub files share the image layers' cache (kind hub-file).
	if s.o.HF.Cache == nil && !s.o.Image.NoCache {
		s.o.HF.Cache = s.o.Image.Cache
	}
	if s.o.HF.RulesVersion == "" {
		s.o.HF.RulesVersion = s.RulesVersion()
	}
	if s.o.Image.Concurrency == 0 {
		s.o.Image.Concurrency = s.o.Workers
	}
	if s.o.Git.MaxFileSize == 0 {
		s.o.Git.MaxFileSize = s.o.MaxFileSize
	}
	return nil
}

// Cache is the result cache the pipeline keeps results in (nil when off):
// the server's verdicts and sweep's finished targets go there too.
func (s *Scanner) Cache() *cache.Cache { return s.o.Image.Cache }

// open opens one target's source with the pipeline's options.
func (s *Scanner) open(ctx context.Context, t Target) (scanners.Source, error) {
	o := source.Options{MaxFileSize: s.o.MaxFileSize, Workers: s.o.Workers, Image: s.o.Image, Git: s.o.Git, HF: s.o.HF,
		Scope: source.Scope{Since: s.o.SinceCommit, Staged: s.o.Staged}, K8s: s.o.K8s}
	if t.base != "" {
		o.Scope = source.Scope{At: t.base}
	}
	if t.Auth != nil {
		o.Image.Keychain = fixedKeychain{t.Auth}
	}
	if t.Insecure {
		ref := strings.TrimPrefix(t.Ref, image.SchemeRegistry+":")
		if reg, err := name.ParseReference(ref, name.Insecure); err == nil {
			o.Image.Insecure = append(slices.Clip(o.Image.Insecure), reg.Context().RegistryStr())
		}
	}
	return source.Open(ctx, t.Ref, o)
}

// fixedKeychain hands the same credentials for every registry: the ones a
// request came with.
type fixedKeychain struct{ a authn.Authenticator }

func (k fixedKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.a, nil }
