//go:build !mlwarden_sbatch

package image

import (
	"strings"
	"testing"
)

// TestImgCacheID: digests from an untrusted manifest key the cache only
// when they are sha256 hex; the id holds the entry format's version.
func TestImgCacheID(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	b := "sha256:" + strings.Repeat("cd", 32)
	if got := imgCacheID(d, b); got != imgCacheVersion+"/"+strings.Repeat("ab", 32)+"-"+strings.Repeat("cd", 32) {
		t.Errorf("id %q", got)
	}
	if got := imgCacheID(d, ""); got != imgCacheVersion+"/"+strings.Repeat("ab", 32) {
		t.Errorf("docker archive id %q", got)
	}
	for _, bad := range [][2]string{{"sha512:" + strings.Repeat("ab", 32), ""}, {"sha256:../../x", ""}, {d, "sha256:" + strings.Repeat("AB", 32)}, {d, "md5:1"}} {
		if got := imgCacheID(bad[0], bad[1]); got != "" {
			t.Errorf("%q: id %q", bad, got)
		}
	}
}

// TestImgCacheMatches: an entry replays only where every file with
// findings or kept state gets the note it had.
func TestImgCacheMatches(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	e := &imgCacheEntry{DiffID: d, Notes: map[string]string{"/app/train.py": ""}}
	h := newImgHidden()
	if !e.matches(h, d, "") {
		t.Fatal("no match in an image that hides nothing")
	}
	ev := newImgEvents()
	ev.add("/app/train.py", imgDeleted)
	h.merge(3, ev)
	if e.matches(h, d, "") {
		t.Error("a file with state deleted above now, not when it was scanned: matched")
	}
	if e.matches(newImgHidden(), d, "sha256:"+strings.Repeat("cd", 32)) {
		t.Error("another blob digest matched")
	}
}
