//go:build !mlwarden_sbatch

package secrets

import "github.com/mlwarden/mlwarden/reports"

// reportFormats are the report formats this build writes: all.
var reportFormats = reports.Formats
