package image

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

// The per-layer cache.
//
// A layer's findings depend only on its bytes, the rules and the note each
// file carries (deleted or replaced by a layer above: that depends on the
// image). So the cache keeps, per (layer diff ID, blob digest, RulesVersion), the layer's
// findings, the notes of the files that had findings, and the layer's own
// whiteouts and entries (which decide the notes of the layers below). A hit
// is used only when every file with findings would get the same note in this
// image; then the layer is neither fetched nor decompressed, and its findings
// are replayed as the scanners made them (with their fingerprints, so that
// baselines and ignores match). A layer where any file could not be scanned
// is never stored.
//
// Keys are digests mlwarden computed itself. An image's config and manifest
// only claim digests: a config can name another image's layer while
// carrying other bytes, and if the claim keyed the cache, scanning that
// image would file "clean" under the other layer's name and hide it from
// every later scan. So a layer is stored only once the walk has hashed its
// whole decompressed stream and found the diff ID the config claims, and
// its compressed blob and found the manifest's digest (checked by the
// registry's verifying reader, or by the walker for a layout; a docker
// archive has no compressed digest). A mismatch is an error for that layer
// and nothing is stored. An entry is found only by an image that claims
// both the same diff ID and the same blob digest; such an image's layer, if
// it runs at all, is those bytes (runtimes check both digests on pull).
// Every cache backend — this directory, and any shared one to come (a
// Redis store is planned) — must keep to this: write only under verified
// digests, look up only by the pair.
//
// The findings flow from the dispatcher's sink to the report, not back to
// the source, so the cache needs a sink that hands them back: imgResultSink,
// an optional interface. Without it (or without RulesVersion, or with
// NoCache) every layer is scanned.

// imgResultSink is an optional interface of a scanners.Sink: the
// dispatcher's sink implements it so that image layers can be cached.
type imgResultSink interface {
	scanners.Sink
	// ArtifactResult scans like Artifact and also returns the findings and
	// errors it recorded for this artifact (already recorded: the caller
	// must not record them again).
	ArtifactResult(a *scanners.Artifact, r io.Reader) ([]scanners.Finding, []scanners.Error, error)
	// Replay records findings a cache kept, as if scanners had returned them.
	Replay(fs []scanners.Finding)
}

// imgCacheVersion changes when the entry format does.
// Version 2 added the blob digest and keys only verified layers: entries of
// version 1 may have been filled by an image that claimed another's layer,
// and are never read.
const imgCacheVersion = 2

type imgCacheEntry struct {
	Version  int                `json:"version"`
	DiffID   string             `json:"diff_id"`
	Digest   string             `json:"digest,omitempty"` // the blob's; "" for a docker archive's layer
	Findings []scanners.Finding `json:"findings"`
	// Notes holds the note of each path with findings at the time of the scan.
	Notes  map[string]string `json:"notes,omitempty"`
	Events []imgEvent        `json:"events"`
}

func (e *imgCacheEntry) events() *imgEvents { return imgEventsFrom(e.Events) }

// matches reports whether the entry's findings are those a scan of the layer
// would give in this image: every file with findings gets the same note.
func (e *imgCacheEntry) matches(h *imgHidden, diffID, digest string) bool {
	if e.Version != imgCacheVersion || e.DiffID != diffID || e.Digest != digest {
		return false
	}
	for _, f := range e.Findings {
		if h.note(f.Path) != e.Notes[f.Path] {
			return false
		}
	}
	return true
}

// replay returns the entry's findings located in target.
func (e *imgCacheEntry) replay(target string) []scanners.Finding {
	out := make([]scanners.Finding, len(e.Findings))
	for i, f := range e.Findings {
		f.Target = target
		out[i] = f
	}
	return out
}

type imgCache struct {
	root     string // the cache; one directory per rules version below it
	dir      string // this rules version's directory
	maxBytes int64
	maxAge   time.Duration
}

// newImgCache returns the cache, or nil when it is off.
func newImgCache(o Options) *imgCache {
	if o.NoCache || o.RulesVersion == "" {
		return nil
	}
	root := o.CacheDir
	if root == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		root = filepath.Join(d, "mlwarden", "layers")
	}
	sum := sha256.Sum256([]byte(o.RulesVersion))
	return &imgCache{root: root, dir: filepath.Join(root, hex.EncodeToString(sum[:8])),
		maxBytes: o.CacheMaxBytes, maxAge: o.CacheMaxAge}
}

// pruneEvery is how often the cache is pruned at most (one process or
// several sharing the directory: a marker file's time says when it last was).
const pruneEvery = 10 * time.Minute

// prune deletes entries unused for longer than maxAge, then the least
// recently used (a hit refreshes an entry's time) until the cache is under
// 90% of maxBytes, across every rules version's directory. Errors only leave
// more behind: entries are rebuilt by the next scan that needs them.
func (c *imgCache) prune(now time.Time) {
	if c == nil || (c.maxBytes < 0 && c.maxAge < 0) {
		return
	}
	marker := filepath.Join(c.root, ".pruned")
	if fi, err := os.Stat(marker); err == nil && now.Sub(fi.ModTime()) < pruneEvery && fi.ModTime().Before(now.Add(time.Minute)) {
		return
	}
	if err := os.MkdirAll(c.root, 0o700); err != nil {
		return
	}
	if f, err := os.Create(marker); err == nil {
		f.Close()
		_ = os.Chtimes(marker, now, now)
	}
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var entries []entry
	var total int64
	versions, _ := os.ReadDir(c.root)
	for _, v := range versions {
		if !v.IsDir() {
			continue
		}
		vdir := filepath.Join(c.root, v.Name())
		files, _ := os.ReadDir(vdir)
		for _, f := range files {
			fi, err := f.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			p := filepath.Join(vdir, f.Name())
			switch {
			case strings.HasPrefix(f.Name(), ".tmp-"):
				if now.Sub(fi.ModTime()) > time.Hour { // left by a killed writer
					os.Remove(p)
				}
				continue
			case !strings.HasSuffix(f.Name(), ".json.gz"):
				continue
			case c.maxAge >= 0 && now.Sub(fi.ModTime()) > c.maxAge:
				os.Remove(p)
				continue
			}
			entries = append(entries, entry{p, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
		if len(files) == 0 || vdir != c.dir {
			_ = os.Remove(vdir) // only succeeds when empty
		}
	}
	if c.maxBytes < 0 || total <= c.maxBytes {
		return
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range entries {
		if total <= c.maxBytes/10*9 {
			break
		}
		if os.Remove(e.path) == nil {
			total -= e.size
		}
	}
}

func (c *imgCache) enabled() bool { return c != nil }

// file is the entry's file name: the diff ID's hex and the blob digest's
// (they come from an untrusted manifest, so anything but sha256 hex is
// refused).
func (c *imgCache) file(diffID, digest string) string {
	hx := imgHex(diffID)
	if hx == "" {
		return ""
	}
	if digest != "" {
		bx := imgHex(digest)
		if bx == "" {
			return ""
		}
		hx += "-" + bx
	}
	return filepath.Join(c.dir, hx+".json.gz")
}

func imgHex(d string) string {
	algo, hx, ok := strings.Cut(d, ":")
	if !ok || algo != "sha256" || len(hx) != 64 || strings.Trim(hx, "0123456789abcdef") != "" {
		return ""
	}
	return hx
}

func (c *imgCache) load(diffID, digest string) *imgCacheEntry {
	if c == nil {
		return nil
	}
	name := c.file(diffID, digest)
	if name == "" {
		return nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil
	}
	var e imgCacheEntry
	if err := json.NewDecoder(zr).Decode(&e); err != nil || e.Version != imgCacheVersion || e.DiffID != diffID || e.Digest != digest {
		return nil
	}
	now := time.Now()
	_ = os.Chtimes(name, now, now) // used: pruned last
	return &e
}

// store writes the job's entry; a failure only costs a rescan next time.
func (c *imgCache) store(j *imgLayerJob, ev *imgEvents) {
	if c == nil {
		return
	}
	if !j.verified.Load() {
		return // never under a digest mlwarden did not compute
	}
	name := c.file(j.diffID, j.digest)
	if name == "" {
		return
	}
	j.mu.Lock()
	e := imgCacheEntry{Version: imgCacheVersion, DiffID: j.diffID, Digest: j.digest, Notes: j.notes, Events: ev.list()}
	e.Findings = make([]scanners.Finding, len(j.findings))
	for i, f := range j.findings {
		if f.Fingerprint == "" {
			// Computed now, while the secret is in memory: it is never
			// written, and the replayed finding must keep the same id.
			f.Fingerprint = scanners.ComputeFingerprint(&f)
		}
		f.Secret = ""
		e.Findings[i] = f
	}
	j.mu.Unlock()
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	zw := gzip.NewWriter(tmp)
	err = json.NewEncoder(zw).Encode(&e)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_ = os.Rename(tmp.Name(), name)
	}
}
