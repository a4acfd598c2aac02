//go:build !mlwarden_sbatch

package catalog

import (
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures"
)

// SignaturesOption configures the signatures check (signatures.Option).
// The sbatch hook's build (tag mlwarden_sbatch, see sbatch.go) leaves the
// check out, and with it cosign and sigstore.
type SignaturesOption = signatures.Option

// signaturesBuilt says this build links the signatures check.
const signaturesBuilt = true

func newSignatures(opts []SignaturesOption) (scanners.Scanner, error) {
	return signatures.New(opts...)
}
