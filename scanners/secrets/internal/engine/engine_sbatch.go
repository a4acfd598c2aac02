//go:build mlwarden_sbatch

package engine

import (
	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/mlwarden/mlwarden/scanners/secrets/internal/detector"
)

// The sbatch hook's build: package detector instead of gitleaks' detect
// and report, whose imports cost the hook's process more than it spends
// checking a script (package detector's comment).
type (
	// Detector finds secrets in a Fragment.
	Detector = detector.Detector
	// Fragment is text to scan and where it is.
	Fragment = detector.Fragment
	// Finding is one secret found.
	Finding = detector.Finding
)

// NewDetector returns a detector over cfg.
func NewDetector(cfg config.Config) *Detector { return detector.NewDetector(cfg) }
