package verdict_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/server/verdict"
)

func TestStores(t *testing.T) {
	d, _ := name.NewDigest("r.invalid/a@sha256:a0000000000000000000000000000000000000000000000000000000000000aa")
	res := &scanners.Result{Findings: []scanners.Finding{
		{RuleID: "x/low", Severity: scanners.SeverityLow},
		{RuleID: "x/crit", Severity: scanners.SeverityCritical},
		{RuleID: "x/sup", Severity: scanners.SeverityCritical, Suppressed: "baseline"},
	}}
	v := verdict.FromResult(d, "v1", res, time.Unix(0, 0))
	if v.Findings[0].RuleID != "x/crit" || len(v.Findings) != 2 || !v.Failed(scanners.SeverityHigh) || v.Failed(scanners.SeverityCritical+1) {
		t.Fatalf("verdict %+v", v)
	}
	if v.Summary.Suppressed != 1 || v.Summary.Critical != 1 {
		t.Errorf("summary %+v", v.Summary)
	}
	b, err := verdict.OpenBolt(filepath.Join(t.TempDir(), "v.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for name, s := range map[string]verdict.Store{"bolt": b, "memory": verdict.NewMemory(), "chain": verdict.Chain{verdict.NewMemory(), verdict.NewMemory()}} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Get(t.Context(), d, "v1"); !errors.Is(err, verdict.ErrNotFound) {
				t.Fatalf("empty store: %v", err)
			}
			if err := s.Put(t.Context(), d, v); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(t.Context(), d, "v1")
			if err != nil || got.Digest != d.DigestStr() || got.Summary != v.Summary {
				t.Fatalf("get: %+v %v", got, err)
			}
			if _, err := s.Get(t.Context(), d, "v2"); !errors.Is(err, verdict.ErrNotFound) {
				t.Errorf("another rules version: %v", err)
			}
		})
	}
	// A chain fills the earlier stores from a later one.
	first, second := verdict.NewMemory(), verdict.NewMemory()
	second.Put(t.Context(), d, v)
	if _, err := (verdict.Chain{first, second}).Get(t.Context(), d, "v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Get(t.Context(), d, "v1"); err != nil {
		t.Errorf("chain did not fill the first store: %v", err)
	}
}

func TestMaxFindings(t *testing.T) {
	d, _ := name.NewDigest("r.invalid/a@sha256:" + "0000000000000000000000000000000000000000000000000000000000000001")
	res := &scanners.Result{}
	for range verdict.MaxFindings + 5 {
		res.Findings = append(res.Findings, scanners.Finding{RuleID: "x/y", Severity: scanners.SeverityMedium})
	}
	v := verdict.FromResult(d, "v1", res, time.Now())
	if len(v.Findings) != verdict.MaxFindings || v.Truncated != 5 || v.Summary.Medium != verdict.MaxFindings+5 {
		t.Errorf("kept %d, truncated %d, summary %+v", len(v.Findings), v.Truncated, v.Summary)
	}
}
