package image

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestImgCachePrune(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := newImgCache(Options{RulesVersion: "v2", CacheDir: root, CacheMaxBytes: 800, CacheMaxAge: 30 * 24 * time.Hour})
	old := filepath.Join(root, "0123456789abcdef") // an older rules version
	put := func(dir, name string, size int, age time.Duration) {
		t.Helper()
		os.MkdirAll(dir, 0o700)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, now.Add(-age), now.Add(-age))
	}
	day := 24 * time.Hour
	put(c.dir, "a.json.gz", 300, 1*day)     // recent: kept
	put(c.dir, "b.json.gz", 300, 2*day)     // kept
	put(c.dir, "c.json.gz", 300, 10*day)    // least recently used: goes for size
	put(c.dir, "d.json.gz", 300, 40*day)    // too old
	put(c.dir, ".tmp-123", 50, 2*time.Hour) // a killed writer's
	put(c.dir, ".tmp-456", 50, time.Minute) // being written
	put(old, "e.json.gz", 200, 31*day)      // old version, too old: dir goes too
	list := func() []string {
		var got []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != ".pruned" {
				rel, _ := filepath.Rel(root, p)
				got = append(got, filepath.ToSlash(rel))
			}
			return nil
		})
		slices.Sort(got)
		return got
	}
	c.prune(now)
	v := filepath.Base(c.dir)
	want := []string{v + "/.tmp-456", v + "/a.json.gz", v + "/b.json.gz"}
	if got := list(); !slices.Equal(got, want) {
		t.Errorf("after prune: %q, want %q", got, want)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the emptied old version's directory is still there: %v", err)
	}
	// Pruned a moment ago: the next scan does not walk the cache again.
	put(c.dir, "f.json.gz", 900, 90*day)
	c.prune(now.Add(time.Minute))
	if got := list(); !slices.Contains(got, v+"/f.json.gz") {
		t.Errorf("pruned again within %v: %q", pruneEvery, got)
	}
	c.prune(now.Add(pruneEvery + time.Minute))
	if got := list(); slices.Contains(got, v+"/f.json.gz") {
		t.Errorf("not pruned after %v: %q", pruneEvery, got)
	}
	// Bounds off: nothing is deleted.
	off := newImgCache(Options{RulesVersion: "v2", CacheDir: root, CacheMaxBytes: -1, CacheMaxAge: -1})
	put(c.dir, "g.json.gz", 5000, 400*day)
	off.prune(now.Add(time.Hour))
	if got := list(); !slices.Contains(got, v+"/g.json.gz") {
		t.Errorf("pruned with bounds off: %q", got)
	}
}

// TestImgCacheHitRefreshes checks that a hit marks the entry as used, so
// the size bound evicts what is least recently used, not least recently
// written.
func TestImgCacheHitRefreshes(t *testing.T) {
	c := newImgCache(Options{RulesVersion: "v1", CacheDir: t.TempDir()})
	diffID := "sha256:" + strings.Repeat("ab", 32)
	os.MkdirAll(c.dir, 0o700)
	f, err := os.Create(c.file(diffID, ""))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	json.NewEncoder(zw).Encode(imgCacheEntry{Version: imgCacheVersion, DiffID: diffID})
	zw.Close()
	f.Close()
	long := time.Now().Add(-100 * 24 * time.Hour)
	os.Chtimes(c.file(diffID, ""), long, long)
	if c.load(diffID, "") == nil {
		t.Fatal("no hit")
	}
	fi, err := os.Stat(c.file(diffID, ""))
	if err != nil || time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("entry time after a hit: %v, %v", fi.ModTime(), err)
	}
}
