// Package verdict keeps the outcome of scanning one image digest so that an
// admission request is answered from it in milliseconds. A verdict is keyed by
// the image digest and the rules version that produced it: new rules make old
// verdicts stale without deleting them.
package verdict

import (
	"context"
	"errors"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners"
)

// ErrNotFound is returned by Store.Get when no verdict is kept for the digest
// and rules version.
var ErrNotFound = errors.New("no verdict")

// Verdict is what one scan of one image digest found.
type Verdict struct {
	// Digest is the scanned manifest digest (sha256:...).
	Digest string `json:"digest"`
	// Repository is where it was pulled from (registry/repo), for people.
	Repository string `json:"repository"`
	// RulesVersion identifies the rule set and checks that produced it.
	RulesVersion string    `json:"rules_version"`
	ScannedAt    time.Time `json:"scanned_at"`
	// Summary counts unsuppressed findings by severity.
	Summary scanners.Summary `json:"summary"`
	// Findings are kept whole up to MaxFindings, highest severity first.
	Findings []scanners.Finding `json:"findings"`
	// Truncated is how many findings were left out.
	Truncated int `json:"truncated,omitempty"`
	// Errors are parts of the image that could not be scanned: a verdict
	// with errors is incomplete and never counts as clean.
	Errors []scanners.Error `json:"errors,omitempty"`
}

// MaxFindings bounds the findings a verdict keeps, so that a hostile image
// cannot make every admission answer slow.
const MaxFindings = 200

// FromResult builds a verdict from a scan result.
func FromResult(ref name.Digest, rulesVersion string, res *scanners.Result, now time.Time) *Verdict {
	v := &Verdict{
		Digest:       ref.DigestStr(),
		Repository:   ref.Context().Name(),
		RulesVersion: rulesVersion,
		ScannedAt:    now.UTC(),
		Summary:      scanners.Summarize(res.Findings),
		Errors:       res.Errors,
	}
	for _, sev := range scanners.Severities() {
		for _, f := range res.Findings {
			if f.Severity != sev || f.Suppressed != "" {
				continue
			}
			if len(v.Findings) >= MaxFindings {
				v.Truncated++
				continue
			}
			v.Findings = append(v.Findings, f)
		}
	}
	return v
}

// Failed reports whether the verdict has an unsuppressed finding at or above
// sev.
func (v *Verdict) Failed(sev scanners.Severity) bool {
	for _, s := range scanners.Severities() {
		if s >= sev && v.Summary.Count(s) > 0 {
			return true
		}
	}
	return false
}

// Worst returns the first kept finding at or above sev (findings are kept
// highest severity first), or nil.
func (v *Verdict) Worst(sev scanners.Severity) *scanners.Finding {
	for i := range v.Findings {
		if v.Findings[i].Severity >= sev {
			return &v.Findings[i]
		}
	}
	return nil
}

// Store keeps verdicts. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the verdict for ref's digest made under rulesVersion, or
	// ErrNotFound.
	Get(ctx context.Context, ref name.Digest, rulesVersion string) (*Verdict, error)
	// Put keeps v.
	Put(ctx context.Context, ref name.Digest, v *Verdict) error
}
