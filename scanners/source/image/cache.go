package image

import (
	"context"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
)

// The per-layer cache.
//
// A layer's result depends only on its bytes, the rules and the note each
// file carries (deleted or replaced by a layer above: that depends on the
// image). So the cache keeps, per (layer diff ID, blob digest, RulesVersion),
// the layer's record (scanners.Record: its findings, what checks that judge
// the whole image kept from its files, its components and skips), the
// notes of the files that had findings or kept state, and the layer's own
// whiteouts and entries (which decide the notes of the layers below). A hit
// is used only when every such file would get the same note in this image;
// then the layer is neither fetched nor decompressed, and its record is
// replayed as the scanners made it (findings with their fingerprints, so
// that baselines and ignores match; the checks' state handed back before
// the image is finished, so that torch.load under an affected torch or a
// namespace without a NetworkPolicy is judged from every layer, as a cold
// scan judges it). A layer where any file could not be scanned is never
// stored.
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
// Every backend of scanners/cache — the directory on this machine, a Redis
// or Valkey server that runners share — is written only here, so the rule
// holds for each: write only under verified digests, look up only by the
// pair.
//
// The findings flow from the dispatcher's sink to the report, not back to
// the source, so the cache needs a sink that hands them back:
// scanners.ResultSink. Without it (or without RulesVersion, or with
// NoCache) every layer is scanned.

// imgCacheVersion changes when the entry format does; it is part of the
// key. Version 2 added the blob digest and keys only verified layers;
// version 3 keeps the whole record (checks' state, components, skips).
const imgCacheVersion = "3"

type imgCacheEntry struct {
	DiffID     string               `json:"diff_id"`
	Digest     string               `json:"digest,omitempty"` // the blob's; "" for a docker archive's layer
	Findings   []scanners.Finding   `json:"findings"`
	States     []scanners.State     `json:"states,omitempty"`
	Components []scanners.Component `json:"components,omitempty"`
	Skipped    []string             `json:"skipped,omitempty"`
	// Notes holds the note of each path with findings or state at the time
	// of the scan.
	Notes  map[string]string `json:"notes,omitempty"`
	Events []imgEvent        `json:"events"`
}

func (e *imgCacheEntry) events() *imgEvents { return imgEventsFrom(e.Events) }

// matches reports whether the entry's record is what a scan of the layer
// would give in this image: every file with findings or state gets the
// same note.
func (e *imgCacheEntry) matches(h *imgHidden, diffID, digest string) bool {
	if e.DiffID != diffID || e.Digest != digest {
		return false
	}
	for _, f := range e.Findings {
		if h.note(f.Path) != e.Notes[f.Path] {
			return false
		}
	}
	for p, n := range e.Notes {
		if h.note(p) != n {
			return false
		}
	}
	return true
}

// record is the entry as the sink replays it.
func (e *imgCacheEntry) record() scanners.Record {
	return scanners.Record{Findings: e.Findings, States: e.States, Components: e.Components, Skipped: e.Skipped}
}

type imgCache struct {
	c       *cache.Cache
	version string
	own     bool // opened here (Options.Cache unset): closed after the walk
}

// newImgCache returns the cache, or nil when it is off: Options.Cache, or
// a directory on this machine (CacheDir) for a caller that set none.
func newImgCache(o Options) *imgCache {
	if o.NoCache || o.RulesVersion == "" {
		return nil
	}
	if o.Cache != nil {
		return &imgCache{c: o.Cache, version: o.RulesVersion}
	}
	c, err := cache.Open(cache.BackendFS, cache.Options{Dir: o.CacheDir, MaxBytes: o.CacheMaxBytes, TTL: o.CacheMaxAge})
	if err != nil {
		return nil
	}
	return &imgCache{c: c, version: o.RulesVersion, own: true}
}

// done bounds a cache of this machine's, and closes one opened here.
func (c *imgCache) done(now time.Time) {
	if c == nil {
		return
	}
	c.c.Maintain(now)
	if c.own {
		c.c.Close()
	}
}

func (c *imgCache) enabled() bool { return c != nil }

// id is the entry's id: the format version, the diff ID's hex and the blob
// digest's (they come from an untrusted manifest, so anything but sha256
// hex is refused).
func imgCacheID(diffID, digest string) string {
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
	return imgCacheVersion + "/" + hx
}

func imgHex(d string) string {
	algo, hx, ok := strings.Cut(d, ":")
	if !ok || algo != "sha256" || len(hx) != 64 || strings.Trim(hx, "0123456789abcdef") != "" {
		return ""
	}
	return hx
}

func (c *imgCache) load(ctx context.Context, diffID, digest string) *imgCacheEntry {
	if c == nil {
		return nil
	}
	id := imgCacheID(diffID, digest)
	if id == "" {
		return nil
	}
	var e imgCacheEntry
	if !c.c.GetJSON(ctx, cache.KindLayer, c.version, id, &e) || e.DiffID != diffID || e.Digest != digest {
		return nil
	}
	return &e
}

// record adds what one artifact of the layer gave to the job's record.
func (j *imgLayerJob) record(a *scanners.Artifact, rec scanners.Record) {
	if len(rec.Errors) > 0 {
		j.failed.Store(true)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rec.Append(rec)
	if len(rec.Findings) > 0 || len(rec.States) > 0 {
		if j.notes == nil {
			j.notes = map[string]string{}
		}
		j.notes[a.Path] = a.Note
	}
}

// store writes the job's entry; a failure only costs a rescan next time.
func (c *imgCache) store(ctx context.Context, j *imgLayerJob, ev *imgEvents) {
	if c == nil {
		return
	}
	if !j.verified.Load() {
		return // never under a digest mlwarden did not compute
	}
	id := imgCacheID(j.diffID, j.digest)
	if id == "" {
		return
	}
	j.mu.Lock()
	e := imgCacheEntry{DiffID: j.diffID, Digest: j.digest, Notes: j.notes, Events: ev.list(),
		States: j.rec.States, Skipped: j.rec.Skipped}
	e.Findings = make([]scanners.Finding, len(j.rec.Findings))
	for i, f := range j.rec.Findings {
		if f.Fingerprint == "" {
			// Computed now, while the secret is in memory: it is never
			// written, and the replayed finding must keep the same id.
			f.Fingerprint = scanners.ComputeFingerprint(&f)
		}
		f.Secret, f.Target = "", ""
		e.Findings[i] = f
	}
	e.Components = make([]scanners.Component, len(j.rec.Components))
	for i, comp := range j.rec.Components {
		comp.Target = ""
		e.Components[i] = comp
	}
	j.mu.Unlock()
	c.c.PutJSON(ctx, cache.KindLayer, c.version, id, &e)
}
