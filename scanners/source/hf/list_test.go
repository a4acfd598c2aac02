//go:build !mlwarden_sbatch

package hf_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
)

// chains are n tree entries, each file at the end of its own chain of
// depth two-byte directories: the listing that makes the most
// directories per byte.
func chains(n, depth int) []hubtest.TreeEntry {
	out := make([]hubtest.TreeEntry, n)
	for i := range out {
		p := fmt.Sprintf("u%05d/", i) + strings.Repeat("a/", depth-1) + "f"
		out[i] = hubtest.TreeEntry{Type: "file", OID: strings.Repeat("0", 40), Size: 1, Path: p}
	}
	return out
}

// walkSink records a walk's first artifact and errors, and stops the walk
// after the first artifact when told to.
type walkSink struct {
	mu     sync.Mutex
	first  time.Time
	errs   []scanners.Error
	cancel context.CancelFunc
}

func (s *walkSink) Artifact(a *scanners.Artifact, r io.Reader) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() {
		s.first = time.Now()
	}
	if s.cancel != nil {
		s.cancel()
	}
	return nil
}

func (s *walkSink) Error(e scanners.Error) {
	s.mu.Lock()
	s.errs = append(s.errs, e)
	s.mu.Unlock()
}

// TestTreeListingBounded: a tree listing with very deep or very long
// paths, or more directories than the source allows, is the target's
// error as it is listed, in memory proportionate to the listing's bytes
// (issue 37, item 24: a 61 MB page of deep paths took 3.4 GB, ~65× its
// size, through a map entry per directory).
func TestTreeListingBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		entries  []hubtest.TreeEntry
		maxFiles int
		want     string
	}{
		{"paths deeper than 256 directories", chains(4000, 300), 0, "directories deep"},
		{"a path longer than 4096 bytes", []hubtest.TreeEntry{{Type: "file", OID: strings.Repeat("0", 40), Size: 1, Path: strings.Repeat("x", 5000)}}, 0, "more than 4096"},
		{"more directories than the source's bound", chains(200, 100), 5000, "more than 5000 directories"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := hubtest.New(t)
			srv.PageSize = 1 << 20
			commit := srv.AddFiles("org/m", []hubtest.File{hubtest.Bytes("README.md", []byte("# m\n"), false)})
			srv.Tree = func(all []hubtest.TreeEntry) []hubtest.TreeEntry { return append(all, tc.entries...) }
			listing, _ := json.Marshal(tc.entries)
			o := hubOptions(srv)
			o.MaxFiles = tc.maxFiles
			src, err := hf.Open(t.Context(), "org/m@"+commit, o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err = src.Walk(ctx, &walkSink{})
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("listing %d bytes: allocated %d (%.1f×): %v", len(listing), alloc, float64(alloc)/float64(len(listing)), err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("walk: %v; want an error saying %q", err, tc.want)
			}
			if alloc > 20*uint64(len(listing))+64<<20 {
				t.Errorf("allocated %d bytes for a listing of %d", alloc, len(listing))
			}
		})
	}
}

// TestTreeListedInReverse: a tree of 200,000 files listed in reverse
// order is sorted once, not inserted at the front file by file (issue 37,
// item 24: 41 s before the first download).
func TestTreeListedInReverse(t *testing.T) {
	const n = 200_000
	files := make([]hubtest.File, n)
	for i := range files {
		files[i] = hubtest.Bytes(fmt.Sprintf("data/%06d.txt", i), []byte("x\n"), false)
	}
	srv := hubtest.New(t)
	srv.PageSize = 1 << 20
	commit := srv.AddFiles("org/many", files)
	srv.Tree = func(all []hubtest.TreeEntry) []hubtest.TreeEntry {
		slices.Reverse(all)
		return all
	}
	src, err := hf.Open(t.Context(), "org/many@"+commit, hubOptions(srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sink := &walkSink{cancel: cancel}
	start := time.Now()
	if err := src.Walk(ctx, sink); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if sink.first.IsZero() {
		t.Fatal("no file was handed over")
	}
	took := sink.first.Sub(start)
	t.Logf("first file after %s", took)
	if took > raceSlowdown*5*time.Second {
		t.Errorf("the first file came %s after the walk began", took)
	}
}
