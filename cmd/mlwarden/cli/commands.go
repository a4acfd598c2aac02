//go:build !mlwarden_sbatch

package cli

import (
	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/server"
)

// commands are mlwarden's commands, in the order help lists them. The
// sbatch hook's build has only sbatch and version (commands_sbatch.go).
func commands(a *app) []*cobra.Command {
	return []*cobra.Command{
		newScanCmd(a),
		newSbatchCmd(a),
		newCUDACmd(a),
		newNodeCmd(a),
		newPinCmd(a),
		newVerifyCmd(a),
		newServeCmd(a),
		newSweepCmd(a),
		newRulesCmd(a),
		newVersionCmd(a),
	}
}

// serveOwner decodes the admission server's section of the config file, so
// that one file serves every command.
func serveOwner() config.Owner {
	var srv server.Config
	return config.Owner{Key: "serve", Into: &srv}
}
