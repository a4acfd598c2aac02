//go:build mlwarden_sbatch

package secrets

// reportFormats are the report formats the sbatch hook's build writes
// (reports/formats_sbatch.go).
var reportFormats = []string{"text", "json", "sarif"}
