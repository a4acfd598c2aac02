// Package suppress is the one place where findings are suppressed: inline
// comments on a finding's line (mlwarden:ignore), ignore entries of the
// config file (with a reason and an expiry date), a baseline report, and a
// gitleaks .gitleaksignore. A suppressed finding stays in the result, marked
// with the reason, and is counted apart: nothing is hidden.
//
// The scan pipeline applies inline comments while an artifact's content is
// still in memory (Inline, through the dispatcher) and the rest once the run
// is over (Set.Apply), in every front end alike: scan, sbatch and serve.
package suppress

import (
	"fmt"
	"os"
	"time"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
)

// Set is what suppresses findings once a run is over.
type Set struct {
	// Ignores are the config file's ignore entries.
	Ignores []Ignore
	// Baseline holds the fingerprints of a previous report's findings.
	Baseline Baseline
	// Gitleaks holds each target's .gitleaksignore, by target name.
	Gitleaks map[string]GitleaksIgnore
	// GitleaksRuleID maps a secrets rule ID to gitleaks' rule id, to match
	// .gitleaksignore entries (nil: no .gitleaksignore applies).
	GitleaksRuleID func(ruleID string) (string, bool)
	// Now is the day expiry dates are judged on (default time.Now).
	Now func() time.Time
}

// Apply marks the findings of res that the set matches and recounts the
// summary. It returns warnings for what no longer applies (expired ignore
// entries), for the user to see.
func (s *Set) Apply(res *scanners.Result) []string {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	if s.GitleaksRuleID != nil {
		for target, ig := range s.Gitleaks {
			ig.Apply(res, target, s.GitleaksRuleID)
		}
	}
	var warnings []string
	for _, ig := range s.Ignores {
		if ig.expired(now) {
			warnings = append(warnings, fmt.Sprintf("ignore entry at line %d (%s) expired on %s and no longer applies", ig.line, ig.Reason, ig.Expires))
		}
	}
	legacy := legacyFingerprints(res.Findings)
	for i := range res.Findings {
		f := &res.Findings[i]
		if f.Suppressed != "" {
			continue
		}
		if s.Baseline[f.Fingerprint] || legacy[i] != "" && s.Baseline[legacy[i]] {
			f.Suppressed = "in baseline"
			continue
		}
		for _, ig := range s.Ignores {
			if !ig.expired(now) && (ig.matches(*f) || legacy[i] != "" && ig.matchesAs(*f, legacy[i])) {
				f.Suppressed = "ignored: " + ig.Reason
				if ig.Expires != "" {
					f.Suppressed += " (until " + ig.Expires + ")"
				}
				break
			}
		}
	}
	res.Summary = scanners.Summarize(res.Findings)
	return warnings
}

// legacyFingerprints returns, for each finding whose secret is still in
// memory, the fingerprint versions before issue 16 gave it: SHA-256 over the
// raw secret (scanners.LegacyFingerprint), its repeats numbered in report
// order as scanners.DistinguishRepeats numbers them. Baselines and ignore
// entries written then keep matching; nothing here is ever written. Others
// get "". A finding replayed from a cache has no secret in memory, so only
// its current fingerprint matches.
func legacyFingerprints(fs []scanners.Finding) []string {
	out := make([]string, len(fs))
	type key struct{ target, fp string }
	seen := map[key]int{}
	for i := range fs {
		if fs[i].Secret == "" {
			continue
		}
		base := scanners.LegacyFingerprint(&fs[i])
		k := key{fs[i].Target, base}
		out[i] = scanners.OccurrenceFingerprint(base, seen[k])
		seen[k]++
	}
	return out
}

// Baseline is the set of fingerprints of a previous report's findings.
type Baseline map[string]bool

// BaselineOf reads the fingerprints of a previous result. A report written
// before repeats had fingerprints of their own lists one fingerprint several
// times in one target (nine torch.load calls in a file); its repeats are
// taken as the occurrence fingerprints they have now
// (scanners.OccurrenceFingerprint), so that such a baseline still covers
// all of them.
func BaselineOf(res *scanners.Result) Baseline {
	b := make(Baseline, len(res.Findings))
	type key struct{ target, fp string }
	seen := map[key]int{}
	for _, f := range res.Findings {
		if f.Fingerprint == "" {
			continue
		}
		k := key{f.Target, f.Fingerprint}
		b[scanners.OccurrenceFingerprint(f.Fingerprint, seen[k])] = true
		seen[k]++
	}
	return b
}

// ReadBaseline reads the fingerprints of a previous JSON report.
func ReadBaseline(path string) (Baseline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	defer f.Close()
	prev, err := reports.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	return BaselineOf(prev), nil
}
