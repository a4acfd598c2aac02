//go:build mlwarden_sbatch

package scan

import (
	"context"
	"errors"

	"github.com/mlwarden/mlwarden/scanners"
)

// The sbatch hook's build never verifies secrets: it sends nothing
// anywhere (Options.VerifySecrets is an error there).

type secretVerifier = *noVerifier

type noVerifier struct{}

func (*noVerifier) Close() {}

func (s *Scanner) openVerifier() error {
	if s.o.VerifySecrets {
		return errors.New("--verify-secrets: not in this build (mlwarden-sbatch sends nothing anywhere; use mlwarden)")
	}
	return nil
}

func (s *Scanner) verify(context.Context, *scanners.Result) {}
