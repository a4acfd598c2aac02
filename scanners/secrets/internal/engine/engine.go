//go:build !mlwarden_sbatch

// Package engine names the gitleaks detector the secrets check runs: in
// the default build gitleaks' own (detect, report), in the sbatch hook's
// build (tag mlwarden_sbatch) the hand-written one of package detector,
// which finds the same without linking gitleaks' sources and report
// packages (engine_sbatch.go). Rules, allowlists and their translation
// are gitleaks' config package in both.
package engine

import (
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

type (
	// Detector finds secrets in a Fragment.
	Detector = detect.Detector
	// Fragment is text to scan and where it is.
	//
	//lint:ignore SA1019 gitleaks v8's detector takes a detect.Fragment.
	Fragment = detect.Fragment
	// Finding is one secret found.
	Finding = report.Finding
)

// NewDetector returns a detector over cfg.
func NewDetector(cfg config.Config) *Detector { return detect.NewDetector(cfg) }
