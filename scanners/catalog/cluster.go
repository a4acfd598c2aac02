//go:build !mlwarden_sbatch

package catalog

import (
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/misconfig"
)

// ClusterOption configures the misconfig check's reading of Kubernetes
// manifests as a whole (misconfig.ClusterOption). The sbatch hook's build
// (tag mlwarden_sbatch, see sbatch.go) leaves that reading out, and with it
// the Kubernetes API types, and the reading of GPU nodes' configuration
// files (misconfig.NodeConfig), which a job script never is.
type ClusterOption = misconfig.ClusterOption

func newCluster(opts []ClusterOption) ([]scanners.Scanner, error) {
	cl, err := misconfig.NewCluster(opts...)
	if err != nil {
		return nil, err
	}
	return []scanners.Scanner{cl, misconfig.NewNodeConfig()}, nil
}
