//go:build mlwarden_sbatch

package misconfig

// dockerfileCommands, in the sbatch hook's build (mlwarden-sbatch), reads
// a Dockerfile as any text (textCommands, what a Dockerfile BuildKit
// cannot parse gets too): its parser and the protobuf runtime it links
// were a tenth of each per-job process's package init, and the hook checks
// batch scripts, never a Dockerfile.
func dockerfileCommands(data []byte) []cmdLine { return textCommands(data) }
