// Command mlwarden scans machine-learning supply chains: container images, git
// repositories, Slurm batch scripts and model files.
package main

import (
	"os"

	"github.com/mlwarden/mlwarden/cmd/mlwarden/cli"
)

// Set by the linker: -X main.version=... -X main.commit=... -X main.date=...
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	os.Exit(cli.Main(cli.BuildInfo{Version: version, Commit: commit, Date: date}, os.Stdin, os.Stdout, os.Stderr, os.Args[1:]))
}
