//go:build mlwarden_sbatch

package scan

import (
	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/config"
)

// The sbatch hook's build (mlwarden-sbatch, tag mlwarden_sbatch) does not
// link the signatures check (scanners/catalog/sbatch.go): a config file's
// signatures section is accepted and not read.

// SignaturesPolicy stands for signatures.Policy, which this build does not
// link.
type SignaturesPolicy struct{}

func signaturesOwner() config.Owner {
	return config.Owner{Key: "signatures", Into: &map[string]any{}}
}

func signaturesPolicy(*config.File) (SignaturesPolicy, error) { return SignaturesPolicy{}, nil }

func signaturesOptions(SignaturesPolicy) []catalog.SignaturesOption { return nil }
