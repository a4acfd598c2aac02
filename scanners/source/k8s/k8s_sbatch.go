//go:build mlwarden_sbatch

package k8s

import (
	"context"
	"fmt"

	"github.com/mlwarden/mlwarden/scanners"
)

// Open refuses k8s: targets in the mlwarden-sbatch build, which links no
// Kubernetes client (a process per job must start fast).
func Open(_ context.Context, ref string, _ Options) (scanners.Source, error) {
	return nil, fmt.Errorf("target %s:%s: k8s: targets are not in the mlwarden-sbatch build; use mlwarden scan", Scheme, ref)
}
