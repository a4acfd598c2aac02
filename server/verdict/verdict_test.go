package verdict_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/internal/redistest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
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

// TestCacheStoreReplicas: two serve replicas, each with its own client of
// one real Redis, read each other's verdicts; another rules version misses.
func TestCacheStoreReplicas(t *testing.T) {
	backend := "redis://" + redistest.Addr(t)
	open := func() verdict.Store {
		c, err := cache.Open(backend, cache.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return verdict.NewCache(c)
	}
	first, second := open(), open()
	var b [8]byte
	rand.Read(b[:])
	d, _ := name.NewDigest("r.invalid/a@sha256:" + strings.Repeat(hex.EncodeToString(b[:]), 4))
	rv := "v-" + hex.EncodeToString(b[:])
	res := &scanners.Result{Findings: []scanners.Finding{{RuleID: "x/crit", Severity: scanners.SeverityCritical}}}
	v := verdict.FromResult(d, rv, res, time.Unix(0, 0))
	if _, err := second.Get(t.Context(), d, rv); !errors.Is(err, verdict.ErrNotFound) {
		t.Fatalf("before any put: %v", err)
	}
	if err := first.Put(t.Context(), d, v); err != nil {
		t.Fatal(err)
	}
	got, err := second.Get(t.Context(), d, rv)
	if err != nil || got.Summary != v.Summary || !got.Failed(scanners.SeverityHigh) {
		t.Fatalf("second replica: %+v %v", got, err)
	}
	if _, err := second.Get(t.Context(), d, rv+"-other"); !errors.Is(err, verdict.ErrNotFound) {
		t.Errorf("another rules version: %v", err)
	}
	// In a chain after the local store, a verdict from Redis fills it.
	local := verdict.NewMemory()
	if _, err := (verdict.Chain{local, second}).Get(t.Context(), d, rv); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Get(t.Context(), d, rv); err != nil {
		t.Errorf("chain did not fill the local store: %v", err)
	}
}
