//go:build !mlwarden_sbatch

package models

import "github.com/mlwarden/mlwarden/scanners"

// decoderMissing reports whether fs says a decoder is not in this build:
// never in the default build (build_sbatch_test.go).
func decoderMissing([]scanners.Finding) bool { return false }
