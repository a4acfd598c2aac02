//go:build !mlwarden_sbatch

package scan

import (
	"context"
	"fmt"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/verify"
)

// secretVerifier asks providers about leaked credentials (--verify-secrets).
type secretVerifier = *verify.Verifier

// openVerifier builds the verifier when Options.VerifySecrets asks for one,
// with the result cache openSources opened; a bad MLWARDEN_VERIFY_ENDPOINTS
// is an error (exit 2).
func (s *Scanner) openVerifier() error {
	if !s.o.VerifySecrets {
		return nil
	}
	var eps map[string]string
	if s.o.VerifyEndpoints != "" {
		var err error
		if eps, err = verify.ParseEndpoints(s.o.VerifyEndpoints); err != nil {
			return err
		}
	}
	v, err := verify.New(verify.Options{Timeout: s.o.VerifyTimeout, Cache: s.cache, TTL: s.o.Cache.TTL, Endpoints: eps})
	if err != nil {
		return fmt.Errorf("--verify-secrets: %w", err)
	}
	s.verifier = v
	return nil
}

// verify records in res what the providers say of its secret findings.
func (s *Scanner) verify(ctx context.Context, res *scanners.Result) {
	if s.verifier == nil {
		return
	}
	s.verifier.Verify(ctx, res.Findings)
}

// VerifyStats counts the provider calls and cached answers of every Run so
// far (zero without --verify-secrets).
func (s *Scanner) VerifyStats() verify.Stats {
	if s.verifier == nil {
		return verify.Stats{}
	}
	return s.verifier.Stats()
}
