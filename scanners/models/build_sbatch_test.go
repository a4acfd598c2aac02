//go:build mlwarden_sbatch

package models

import (
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/internal/unpack"
	"github.com/mlwarden/mlwarden/scanners"
)

// decoderMissing reports whether fs says a decoder is not in this build:
// mlwarden-sbatch's build (-tags mlwarden_sbatch) opens no xz, zstd or 7z
// (internal/unpack), and a case that needs one is skipped there.
func decoderMissing(fs []scanners.Finding) bool {
	return slices.ContainsFunc(fs, func(f scanners.Finding) bool {
		return strings.Contains(f.Message+f.Evidence, unpack.ErrNotInBuild.Error())
	})
}
