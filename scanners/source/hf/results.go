package hf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
)

// The result cache of Hub files (cache.KindHubFile).
//
// A Git LFS file's result is kept by its object id (the sha256 the tree
// lists), its path in the repository and the rules version: the checks
// choose files by name and findings carry the path, so the same bytes
// under another name are another entry. A later scan — another commit of
// the repository, another repository, another CI runner sharing a Redis —
// that lists the same object at the same path replays the record (its
// findings with their fingerprints, its components, what checks that judge
// the whole repository kept from it: scanners.StateKeeper) without
// downloading a byte of the file.
//
// Keys are digests mlwarden computed itself (as for image layers; issue
// 15). The tree only claims an object id: a mirror, a proxy or a
// self-hosted Hub could list one file's id for other bytes, and if that
// claim keyed the cache, scanning there would file "clean" under the real
// file's id and hide it from every later scan, on every machine that
// shares the cache. So an entry is written only when the walk's own reads
// fetched the whole file, each byte once and in order, and those bytes
// hash to the object id (wholeHash): then every byte any check saw is the
// object's. A file read only in part — a safetensors header, a
// checkpoint's zip directory and pickles, the head of a file no check
// wants — has an object id nobody here verified, and nothing is stored for
// it: it is scanned every time, which costs what its partial read costs
// (by design, little). Nor is anything stored for a file where any check
// read another file of the repository while scanning it (a requirements
// file's includes, a pyproject's lock file: artifactFS), since its result
// is then not the file's alone; for a file with errors; or when the scan
// was stopped. Plain git files (no object id, or a git blob sha1 only)
// are never cached.
//
// A hit trusts the tree's object id for this scan's file, as the
// signatures check already does (FileDigest): the record replayed is the
// one of the bytes the Hub serves under that id.

// hubCacheVersion changes when the entry format does; it is part of the id.
const hubCacheVersion = "1"

type hubEntry struct {
	OID        string               `json:"oid"`
	Path       string               `json:"path"`
	Size       int64                `json:"size"`
	Findings   []scanners.Finding   `json:"findings,omitempty"`
	States     []scanners.State     `json:"states,omitempty"`
	Components []scanners.Component `json:"components,omitempty"`
	Skipped    []string             `json:"skipped,omitempty"`
}

// hubResults is the cache as the source uses it; nil is off.
type hubResults struct {
	c       *cache.Cache
	version string
}

func newHubResults(o Options) *hubResults {
	if o.Cache == nil || o.RulesVersion == "" {
		return nil
	}
	return &hubResults{c: o.Cache, version: o.RulesVersion}
}

// lfsOID is f's Git LFS object id in lower-case hex, "" when the tree
// gives none that is a sha256.
func lfsOID(f *File) string {
	if f.LFS == nil {
		return ""
	}
	oid := strings.ToLower(f.LFS.OID)
	if len(oid) != 64 || !isHex(oid) {
		return ""
	}
	return oid
}

// id is the entry's id: the format, the object id and the path's sha256.
func hubCacheID(oid, p string) string {
	ps := sha256.Sum256([]byte(p))
	return hubCacheVersion + "/" + oid + "/" + hex.EncodeToString(ps[:])
}

// load returns the entry of f, or nil.
func (r *hubResults) load(ctx context.Context, f *File) *hubEntry {
	oid := lfsOID(f)
	if r == nil || oid == "" {
		return nil
	}
	var e hubEntry
	if !r.c.GetJSON(ctx, cache.KindHubFile, r.version, hubCacheID(oid, f.Path), &e) || e.OID != oid || e.Path != f.Path || e.Size != f.Size {
		return nil
	}
	return &e
}

// record is the entry as the sink replays it into the repository rfs.
func (e *hubEntry) record(rfs fs.FS) scanners.Record {
	return scanners.Record{Findings: e.Findings, States: e.States, Components: e.Components, Skipped: e.Skipped, FS: rfs}
}

// store keeps rec, what the checks gave for f, when it may be kept (see
// above): w says whether the whole file was fetched and hashed to its
// object id, view whether a check read a neighbour.
func (r *hubResults) store(ctx context.Context, f *File, rec scanners.Record, w *wholeHash, view *artifactFS) {
	oid := lfsOID(f)
	if r == nil || oid == "" || len(rec.Errors) > 0 || ctx.Err() != nil || view.used.Load() || !w.matches(f.Size, oid) {
		return
	}
	e := hubEntry{OID: oid, Path: f.Path, Size: f.Size, States: rec.States, Skipped: rec.Skipped}
	e.Findings = make([]scanners.Finding, len(rec.Findings))
	for i, fd := range rec.Findings {
		if fd.Fingerprint == "" {
			// Computed now, while the secret is in memory: it is never
			// written, and the replayed finding must keep the same id.
			fd.Fingerprint = scanners.ComputeFingerprint(&fd)
		}
		fd.Secret, fd.Target = "", ""
		e.Findings[i] = fd
	}
	e.Components = make([]scanners.Component, len(rec.Components))
	for i, c := range rec.Components {
		c.Target = ""
		e.Components[i] = c
	}
	r.c.PutJSON(ctx, cache.KindHubFile, r.version, hubCacheID(oid, f.Path), &e)
}

// wholeHash hashes a file's bytes as the walk's reader fetches them. It
// holds the sha256 of the whole file only when the fetches, in the order
// they were made, cover it exactly: the first at 0, each next where the
// last ended, the last at its end — so every byte was fetched once, and
// every byte a check read is one of those. A fetch out of that order (a
// block fetched again after eviction, a read-ahead of a zip's headers, a
// read past a gap) breaks it for good: the file is then not verified, and
// nothing is cached for it.
type wholeHash struct {
	mu     sync.Mutex
	h      hash.Hash
	pos    int64
	broken bool
}

func newWholeHash() *wholeHash { return &wholeHash{h: sha256.New()} }

// fetched adds what one fetch of n bytes at off returned.
func (w *wholeHash) fetched(off, n int64, data []byte) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken || off != w.pos || int64(len(data)) != n {
		w.broken = true
		return
	}
	w.h.Write(data)
	w.pos += n
}

// matches reports whether the fetches covered size bytes and hash to oid.
func (w *wholeHash) matches(size int64, oid string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.broken && w.pos == size && hex.EncodeToString(w.h.Sum(nil)) == oid
}

// artifactFS is the repository as the checks see it while one file whose
// result may be cached is scanned: it notes any read of the repository
// (Open, Stat, ReadDir, a digest), since the file's result then rests on
// other files too. A check that keeps a memo of the repository's files
// (the signatures check's digests) reads past it (Unwrap): what it reads
// while scanning must never change an artifact's findings.
type artifactFS struct {
	r    *repoFS
	used atomic.Bool
}

func (v *artifactFS) Open(name string) (fs.File, error) {
	v.used.Store(true)
	return v.r.Open(name)
}

func (v *artifactFS) Stat(name string) (fs.FileInfo, error) {
	v.used.Store(true)
	return v.r.Stat(name)
}

func (v *artifactFS) ReadDir(name string) ([]fs.DirEntry, error) {
	v.used.Store(true)
	return v.r.ReadDir(name)
}

// FileDigest is the repository's (checksums.KnownDigests).
func (v *artifactFS) FileDigest(name, algo string) (string, int64, bool) {
	v.used.Store(true)
	return v.r.FileDigest(name, algo)
}

// Unwrap is the repository's file system.
func (v *artifactFS) Unwrap() fs.FS { return v.r }
