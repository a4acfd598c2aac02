//go:build !mlwarden_sbatch

package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/node"
	"github.com/mlwarden/mlwarden/scanners/config"
)

// serveNodeMetrics is `mlwarden node --metrics-listen`: not yet built.
func serveNodeMetrics(_ *cobra.Command, _ *app, _ *config.Values, _ node.Options, addr string) error {
	return usageError("--metrics-listen %s: %v", addr, errors.New("not built yet"))
}

var _ = fmt.Sprint
