// Package imagescan is the server's ImageScanner built from mlwarden's own
// pieces: the image source (scanners/source), the enabled checks and the
// dispatcher. It is the only place the server meets the scanning pipeline.
package imagescan

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/server"
)

// Scanner scans registry images with a fixed set of checks.
type Scanner struct {
	checks []scanners.Scanner
	img    image.Options
	disp   []scanners.Option
}

// Option configures a Scanner.
type Option func(*Scanner)

// WithImageOptions sets how images are pulled (platform, limits, keychain,
// layer cache).
func WithImageOptions(o image.Options) Option { return func(s *Scanner) { s.img = o } }

// WithDispatcherOptions sets the dispatcher's options (workers, memory).
func WithDispatcherOptions(o ...scanners.Option) Option {
	return func(s *Scanner) { s.disp = append(s.disp, o...) }
}

// New returns a Scanner running checks (from catalog.New).
func New(checks []scanners.Scanner, opts ...Option) *Scanner {
	s := &Scanner{checks: checks}
	for _, o := range opts {
		o(s)
	}
	return s
}

var _ server.ImageScanner = (*Scanner)(nil)

// ScanImage implements server.ImageScanner. A target that could not be read
// at all (registry unreachable, manifest missing) is an error, so that the
// server retries it; files that could not be read stay in the result's
// errors and make the verdict incomplete.
func (s *Scanner) ScanImage(ctx context.Context, req server.ScanRequest) (*scanners.Result, error) {
	o := s.img
	if req.Auth != nil {
		o.Keychain = fixedKeychain{req.Auth}
	}
	if req.Ref.Context().Registry.Scheme() == "http" {
		o.Insecure = append(append([]string(nil), o.Insecure...), req.Ref.RegistryStr())
	}
	src, err := image.Open(ctx, image.SchemeRegistry, req.Ref.String(), o)
	if err != nil {
		return nil, err
	}
	res := scanners.NewDispatcher(s.checks, s.disp...).Run(ctx, src)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(res.Findings) == 0 {
		var errs []error
		for _, e := range res.Errors {
			if e.Path == "" {
				errs = append(errs, e)
			}
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}
	return res, nil
}

// fixedKeychain hands the same credentials for every registry: the ones a
// request (Harbor's robot account) came with.
type fixedKeychain struct{ a authn.Authenticator }

func (k fixedKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.a, nil }
