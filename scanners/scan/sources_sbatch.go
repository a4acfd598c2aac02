//go:build mlwarden_sbatch

package scan

import (
	"context"
	"errors"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
)

// The sbatch hook's build (mlwarden-sbatch, tag mlwarden_sbatch) checks
// scripts held in memory (Target.Script, or "-") and nothing else: it does
// not link the sources of paths, images, repositories and Hub models
// (go-containerregistry, the git reader, the Hub client) nor the result
// cache (its Redis client alone was 4 MB of the binary). Their options are
// stand-ins, and a target by reference is an error of that target.

type (
	// cacheOptions stands for cache.Options.
	cacheOptions struct{}
	// imageOptions stands for image.Options.
	imageOptions struct{}
	// gitOptions stands for source.GitOptions.
	gitOptions struct{}
	// hfOptions stands for hf.Options.
	hfOptions struct{}
	// k8sOptions stands for k8s.Options.
	k8sOptions struct{}
	// authenticator stands for authn.Authenticator.
	authenticator any
	resultCache   = *noCache
)

// noCache is the result cache this build does not have.
type noCache struct{}

func (*noCache) Close() {}

// defaultMaxFileSize is source.DefaultMaxFileSize.
const defaultMaxFileSize int64 = 64 << 30

func sourceOptionsFrom(*config.Values, *Options) {}

func configTargets(targets []string) []string { return targets }

func (s *Scanner) openSources() error { return nil }

func (s *Scanner) open(context.Context, Target) (scanners.Source, error) {
	return nil, errors.New("not in this build (mlwarden-sbatch checks batch scripts; use mlwarden)")
}
