package rules

// The models check's pickle globals: dangerous, safe and library tiers.

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"go.yaml.in/yaml/v3"
)

// PickleFile is the name of the pickle globals table inside a rules fs.FS.
const PickleFile = "pickle.yaml"

//go:embed pickle.yaml
var pickleFS embed.FS

// PickleFS returns the built-in pickle globals table (PickleFile) as an fs.FS.
func PickleFS() fs.FS { return pickleFS }

// PickleRules is the parsed pickle.yaml.
type PickleRules struct {
	// Dangerous globals: reported at their severity (default critical).
	Dangerous []PickleEntry `yaml:"dangerous"`
	// Safe globals: never reported. Matched on the exact module and name.
	Safe []PickleEntry `yaml:"safe"`
	// Library globals (scikit-learn, SciPy, XGBoost, ...): trusted as far as
	// the library is; never reported. Matched on the module prefix, and never
	// for a dotted name.
	Library []PickleEntry `yaml:"library"`
}

// PickleEntry is one module with some or all of its names.
type PickleEntry struct {
	Module string   `yaml:"module"`
	Names  []string `yaml:"names"`
	// Severity of a dangerous entry: critical (default) or high.
	Severity string `yaml:"severity"`
	// Why the entry is in its tier: what the global does when a pickle
	// imports or calls it. Every entry has one (the loader refuses an
	// entry without it), so that each verdict can be checked.
	Why string `yaml:"why"`
}

// LoadPickle reads PickleFile from fsys (the built-in table is PickleFS()).
func LoadPickle(fsys fs.FS) (*PickleRules, error) {
	data, err := fs.ReadFile(fsys, PickleFile)
	if err != nil {
		return nil, fmt.Errorf("read pickle rules: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var r PickleRules
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("parse %s: %w", PickleFile, err)
	}
	for t, tier := range [][]PickleEntry{r.Dangerous, r.Safe, r.Library} {
		name := [...]string{"dangerous", "safe", "library"}[t]
		for i, e := range tier {
			if strings.TrimSpace(e.Module) == "" {
				return nil, fmt.Errorf("parse %s: %s entry %d has no module", PickleFile, name, i+1)
			}
			if strings.TrimSpace(e.Why) == "" {
				return nil, fmt.Errorf("parse %s: %s entry %s has no why (say what the global does when a pickle imports it)", PickleFile, name, e.Module)
			}
			switch e.Severity {
			case "", "critical", "high", "medium", "low":
			default:
				return nil, fmt.Errorf("parse %s: module %s: unknown severity %q", PickleFile, e.Module, e.Severity)
			}
		}
	}
	if len(r.Dangerous) == 0 {
		return nil, fmt.Errorf("parse %s: no dangerous globals", PickleFile)
	}
	return &r, nil
}
