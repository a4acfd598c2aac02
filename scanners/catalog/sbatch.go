//go:build mlwarden_sbatch

package catalog

import (
	"errors"

	"github.com/mlwarden/mlwarden/scanners"
)

// The sbatch hook's binary (mlwarden-sbatch: go build -tags
// mlwarden_sbatch ./cmd/mlwarden) runs as one process per submitted job,
// where linking cosign and sigstore cost more start-up time than checking
// the script (docs/design/sbatch-hook.md). Its table is this one; only the
// signatures check is left out, and asking for it is an error.

// SignaturesOption stands for signatures.Option, which this build does not
// link.
type SignaturesOption func()

func newSignatures([]SignaturesOption) (scanners.Scanner, error) {
	return nil, errors.New("not in this build (mlwarden-sbatch checks batch scripts; use mlwarden)")
}
