//go:build !mlwarden_sbatch

package pins

// hookBuild: the tests run on mlwarden-sbatch's build (-tags
// mlwarden_sbatch), which reads no Dockerfile.
const hookBuild = false
