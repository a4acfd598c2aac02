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

// scanUnsigned reports, once per directory, model files with neither a
// model signature nor a checksum manifest beside them.
func (s *Scanner) scanUnsigned(a *scanners.Artifact) []scanners.Finding {
	h, dir := s.hasher(a)
	if h == nil {
		return nil
	}
	key := "unsigned\x00" + a.Target + "\x00" + dir
	s.mu.Lock()
	seen := s.done[key]
	s.done[key] = true
	s.mu.Unlock()
	if seen {
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
