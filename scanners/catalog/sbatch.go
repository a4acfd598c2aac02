//go:build mlwarden_sbatch

package catalog

import (
	"errors"

	"github.com/mlwarden/mlwarden/scanners"
)

// The sbatch hook's binary (mlwarden-sbatch: go build -tags
// mlwarden_sbatch ./cmd/mlwarden) runs as one process per submitted job,
// where linking cosign and sigstore cost more start-up time than checking
// the script (docs/design/sbatch-hook.md). Its table is this one; the
// signatures check is left out (asking for it is an error), and so is the
// misconfig check's reading of Kubernetes manifests as a whole
// (misconfig.Cluster, which links the Kubernetes API types): the hook's
// script is named "job script", never a manifest.

// SignaturesOption stands for signatures.Option, which this build does not
// link.
type SignaturesOption func()

// signaturesBuilt says this build links the signatures check.
const signaturesBuilt = false

func newSignatures([]SignaturesOption) (scanners.Scanner, error) {
	return nil, errors.New("not in this build (mlwarden-sbatch checks batch scripts; use mlwarden)")
}

// ClusterOption stands for misconfig.ClusterOption, which this build does
// not link.
type ClusterOption func()

func newCluster([]ClusterOption) ([]scanners.Scanner, error) { return nil, nil }
