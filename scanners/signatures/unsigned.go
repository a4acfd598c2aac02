package signatures

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
)

// noteModelDir remembers that a, a model file of a local target, is in a
// directory that FinishTarget judges (scanUnsigned), once per directory;
// it reports whether a was such a file.
func (s *Scanner) noteModelDir(a *scanners.Artifact) bool {
	h, dir := s.hasher(a)
	if h == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dirs := s.modelDir[a.Target]
	if dirs == nil {
		dirs = map[string]*scanners.Artifact{}
		s.modelDir[a.Target] = dirs
	}
	if dirs[dir] == nil {
		b := *a
		dirs[dir] = &b
	}
	return true
}

// scanUnsigned reports the directory of a, a model file, when it has
// neither a model signature nor a checksum manifest. It is judged when the
// target has been walked, from the directory's listing, not from a: which
// model file the walk reached first (or a cache replayed) changes nothing.
func (s *Scanner) scanUnsigned(a *scanners.Artifact) []scanners.Finding {
	h, dir := s.hasher(a)
	if h == nil {
		return nil
	}
	entries, err := fs.ReadDir(h.FS(), dir)
	if err != nil {
		return nil
	}
	// The example names the directory's first model file in name order,
	// not whichever one the walk reached first: reports are deterministic.
	example := path.Base(a.Path)
	first := true
	for _, e := range entries {
		n := e.Name()
		if slices.Contains(s.sigNames(dir), n) || checksums.IsManifestName(n) || strings.HasSuffix(n, ".sigstore.json") || strings.HasSuffix(n, ".sig") {
			return nil
		}
		if first && e.Type().IsRegular() && isModelFile(strings.ToLower(n)) {
			example, first = n, false
		}
	}
	// A model signature higher up covers sub-directories.
	for d := dir; d != "." && d != "/"; {
		d = path.Dir(d)
		for _, n := range s.sigNames(d) {
			if _, err := h.Stat(path.Join(d, n)); err == nil {
				return nil
			}
		}
	}
	mp := s.lp.model(dir)
	sev, what := scanners.SeverityInfo, "no signature policy covers it"
	if mp != nil && mp.Mode != "warn" {
		sev, what = scanners.SeverityHigh, fmt.Sprintf("the policy requires models under %q to be signed", mp.Path)
	}
	b := *a
	b.Path = dir
	f := scanners.At(&b, RuleUnsigned, 0, fmt.Sprintf(
		"model directory %s (e.g. %s) has no model signature (model.sig) and no checksum manifest; %s; sign it with model_signing or publish a SHA256SUMS, and verify it before loading", dir, example, what))
	f.Severity = sev
	return []scanners.Finding{f}
}
