package scan

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
)

// markTargetConfig says, in the report, that the config in effect came from
// a scanned directory (a developer's own checkout; CI on untrusted changes
// runs with --no-target-config): the directory's target gets a note, and
// every finding its ignore entries suppressed names the file. A scanned
// thing that configures its own scan — `ignore: [{rule: "*"}]`, a narrower
// `checks:`, `fail-on: none` — is then visible in every report format.
func markTargetConfig(res *scanners.Result, cf *config.File) {
	if cf == nil || !cf.FromTarget {
		return
	}
	n := 0
	for i := range res.Findings {
		f := &res.Findings[i]
		if reason, ok := strings.CutPrefix(f.Suppressed, "ignored: "); ok {
			f.Suppressed = fmt.Sprintf("ignored by %s, the scanned directory's own config: %s", cf.Path, reason)
			n++
		}
	}
	note := fmt.Sprintf("scanned with the settings and ignore entries of its own %s (%d finding(s) suppressed by it); --no-target-config scans it without them", config.FileName, n)
	var refused []string
	for _, r := range cf.Refused {
		refused = append(refused, fmt.Sprintf("%s (line %d: %s)", r.Key, r.Line, r.Why))
	}
	at := -1
	for i, t := range res.Targets {
		if t.Kind != scanners.KindDir {
			continue
		}
		if at < 0 || filepath.Join(strings.TrimPrefix(t.Name, "dir:"), config.FileName) == cf.Path {
			at = i
		}
	}
	if at < 0 {
		return
	}
	res.Targets[at].Notes = append(res.Targets[at].Notes, note)
	if len(refused) > 0 {
		res.Targets[at].Notes = append(res.Targets[at].Notes, fmt.Sprintf("settings of its own %s not taken: %s", config.FileName, strings.Join(refused, "; ")))
	}
}

// warnTargetConfig warns of each setting a scanned directory's own config
// set but may not (config.File.Refused), once when the pipeline is built.
func warnTargetConfig(cf *config.File, warn func(string)) {
	if cf == nil || warn == nil {
		return
	}
	for _, r := range cf.Refused {
		warn(r.String(cf.Path))
	}
}
