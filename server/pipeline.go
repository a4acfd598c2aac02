//go:build !mlwarden_sbatch

package server

import (
	"context"
	"errors"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// Pipeline is the ImageScanner made of the scan pipeline: the same checks,
// settings and suppressions (the config's ignore entries) as `mlwarden
// scan registry:REF`.
type Pipeline struct {
	Scanner *scan.Scanner
}

var _ ImageScanner = Pipeline{}

// ScanImage implements ImageScanner. A target that could not be read at all
// (registry unreachable, manifest missing) is an error, so that the server
// retries it; files that could not be read stay in the result's errors and
// make the verdict incomplete.
func (p Pipeline) ScanImage(ctx context.Context, req ScanRequest) (*scanners.Result, error) {
	t := scan.Target{Ref: "registry:" + req.Ref.String(), Auth: req.Auth}
	if req.Ref.Context().Registry.Scheme() == "http" {
		t.Insecure = true
	}
	res, err := p.Scanner.Run(ctx, t)
	if err != nil {
		return nil, err
	}
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
	return res.Result, nil
}
