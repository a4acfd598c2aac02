//go:build mlwarden_sbatch

package reports

// The sbatch hook's build (mlwarden-sbatch, tag mlwarden_sbatch) writes
// only the formats `sbatch --format` offers — text, json and sarif — and
// does not link the others (CycloneDX with encoding/gob, JUnit's XML,
// GitLab's reports, html/template): their package init ran on every job.

func otherWriter(string, Options) Writer { return nil }
