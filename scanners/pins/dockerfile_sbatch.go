//go:build mlwarden_sbatch

package pins

// scanDockerfile, in the sbatch hook's build (mlwarden-sbatch), says the
// file was not read: BuildKit's Dockerfile parser and the protobuf runtime
// it links were a tenth of each per-job process's package init, and the
// hook checks batch scripts, never a Dockerfile.
func scanDockerfile(_ []byte, r *rep) {
	r.add(ruleUnparsed, 0, "", "this Dockerfile was not checked for pins: mlwarden-sbatch checks batch scripts; run mlwarden scan on it")
}
