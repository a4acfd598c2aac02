//go:build mlwarden_sbatch

package pins

import "testing"

// fuzzSites: the sbatch hook's build has no Rewrite (rewrite.go), so no
// sites to check.
func fuzzSites(*testing.T, string, []byte) {}
