//go:build !mlwarden_sbatch

package scan

import (
	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/signatures"
)

// SignaturesPolicy is the config file's signatures section
// (signatures.Policy). The sbatch hook's build (tag mlwarden_sbatch, see
// sbatch.go) does not link the signatures check.
type SignaturesPolicy = signatures.Policy

func signaturesOwner() config.Owner {
	return config.Owner{Key: "signatures", Into: &signatures.Policy{}}
}

// signaturesPolicy reads the config file's signatures section; key and root
// paths in it are relative to the config file.
func signaturesPolicy(f *config.File) (SignaturesPolicy, error) {
	var pol signatures.Policy
	if err := f.DecodeSection("signatures", &pol); err != nil {
		return pol, err
	}
	return pol.Resolve(f.Dir()), nil
}

func signaturesOptions(p SignaturesPolicy) []catalog.SignaturesOption {
	return []catalog.SignaturesOption{signatures.WithPolicy(p)}
}
