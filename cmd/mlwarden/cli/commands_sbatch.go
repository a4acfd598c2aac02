//go:build mlwarden_sbatch

package cli

import (
	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners/config"
)

// The sbatch hook's binary, mlwarden-sbatch:
//
//	go build -tags mlwarden_sbatch -o mlwarden-sbatch ./cmd/mlwarden
//
// job_submit.lua runs one process per submitted job, and a process of the
// whole mlwarden spends most of its time starting (cosign, sigstore, the
// admission server and the Kubernetes client linked). This build has the
// same sbatch command — the same code, flags, output and exit codes — and
// version, and leaves out the other commands and the signatures check
// (scanners/catalog/sbatch.go). See docs/design/sbatch-hook.md.
func commands(a *app) []*cobra.Command {
	return []*cobra.Command{newSbatchCmd(a), newVersionCmd(a)}
}

// serveOwner accepts the admission server's section of a shared config file
// without reading it: this build has no server.
func serveOwner() config.Owner {
	return config.Owner{Key: "serve", Into: &map[string]any{}}
}
