package secrets

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// Lazy rules.
//
// Compiling the ~250 regexps of the built-in rules is most of a one-script
// run (mlwarden sbatch as a per-job hook: about 60 of its 150 ms on two
// cores). gitleaks runs a rule only when one of its keywords occurs in the
// text (or it has none), so for one small input it is enough to compile
// those rules: the detector then finds exactly what the full one would.
// The decoding pass breaks that — decoded text may hold other keywords — so
// an input where a segment may decode (mayDecode) gets the full detector.

// lazyRules holds the built-in rules read but not compiled.
type lazyRules struct {
	// base and ours are gitleaks' rules and ours; with their index (when
	// the file could be cut), their Rules hold only what the index reads.
	base, ours config.ViperConfig
	index      [2]*indexed
	// tables returns each file's tables outside [[rules]] (its global
	// allowlists), read at first use for an indexed file.
	tables   [2]func() (config.ViperConfig, error)
	disabled []string
	// meta is rules/secrets.toml's metadata, read at first use: parsing it
	// was a twentieth of a clean sbatch job's process.
	meta func() *rules.Secrets
	// keywords of each rule id, lower-cased, from both files (extend
	// merges them); a rule with none runs on every input.
	keywords map[string][]string
	ids      []string
	// needs holds, for a rule every definition of which (gitleaks',
	// ours) has needed literals, each definition's (need.go): the rule is
	// compiled only for text that holds one of some definition's.
	needs map[string][][]need

	full func() *engine.Detector // every rule, with decoding
	// patterns holds the needed literals of the global allowlists'
	// patterns, found once (allowprune.go).
	patterns func() map[string][]need

	mu      sync.Mutex
	cache   map[string]*screened           // by the ids compiled
	globals map[string][]*config.Allowlist // by prunedAllowlists' keys
}

// fragmentDetector finds secrets in one fragment: a gitleaks detector, or
// a screened one.
type fragmentDetector interface {
	DetectContext(ctx context.Context, f engine.Fragment) []engine.Finding
}

// screened runs a few rules without the global allowlists first, and only
// when they find something again with them: compiling gitleaks' global
// allowlist (a few hundred path and stop-word patterns) was most of a
// clean script's set-up, and an allowlist only ever drops findings, so the
// two passes find what the allowlisted detector alone finds
// (TestScreenedAllowlist).
type screened struct {
	bare *engine.Detector
	cfg  config.Config // bare's
	l    *lazyRules

	mu      sync.Mutex
	allowed map[string]*engine.Detector // with the global allowlists, by their key
}

func (s *screened) DetectContext(ctx context.Context, f engine.Fragment) []engine.Finding {
	out := s.bare.DetectContext(ctx, f)
	if len(out) == 0 {
		return nil
	}
	// What the global allowlists' value patterns are matched against:
	// each finding's secret, match or line (a regexp finding's line holds
	// the other two; a path rule's finding has only a match).
	var lines strings.Builder
	for _, g := range out {
		for _, v := range []string{g.Line, g.Match, g.Secret} {
			lines.WriteString(v)
			lines.WriteByte('\n')
		}
	}
	t := allowTarget{path: f.FilePath, winPath: f.WindowsFilePath, text: lines.String()}
	t.lower = strings.ToLower(t.text)
	d, err := s.withGlobals(t)
	if err != nil {
		return out // not reached: the same rules compiled without the allowlists
	}
	return d.DetectContext(ctx, f)
}

// withGlobals returns s's rules with the global allowlists' patterns that
// may match t.
func (s *screened) withGlobals(t allowTarget) (*engine.Detector, error) {
	globals, key, err := s.l.globalAllowlists(t)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.allowed[key]; d != nil {
		return d, nil
	}
	cfg := s.cfg
	cfg.Allowlists = globals
	d := keepAllowed(engine.NewDetector(cfg))
	s.allowed[key] = d
	return d, nil
}

// builtinLazy reads the built-in rules once per process.
var builtinLazy = sync.OnceValues(func() (*lazyRules, error) {
	// The index of a file (its tables outside [[rules]] read at first
	// use), or the whole file when it cannot be cut.
	read := func(b []byte) (config.ViperConfig, config.Extend, *indexed, func() (config.ViperConfig, error), error) {
		if ix, err := indexBuiltin(b); err == nil {
			tables := sync.OnceValues(func() (config.ViperConfig, error) {
				vc, _, err := ix.tables()
				return vc, err
			})
			return ix.vc, ix.ext, ix, tables, nil
		}
		vc, e, err := readBuiltin(b)
		tables := vc
		tables.Rules = nil
		return vc, e, nil, func() (config.ViperConfig, error) { return tables, nil }, err
	}
	// gitleaks' own [extend] is not followed (its default config has none).
	base, _, baseIx, baseTables, err := read([]byte(config.DefaultConfig))
	if err != nil {
		return nil, fmt.Errorf("gitleaks default config: %w", err)
	}
	b, err := fs.ReadFile(rules.SecretsFS(), rules.SecretsFile)
	if err != nil {
		return nil, fmt.Errorf("read secrets rules: %w", err)
	}
	ours, ext, oursIx, oursTables, err := read(b)
	if err != nil {
		return nil, fmt.Errorf("built-in secrets rules: %w", err)
	}
	meta := sync.OnceValue(func() *rules.Secrets {
		m, err := rules.ParseSecrets(b)
		if err != nil {
			// Not reached: the file is embedded, parsed as TOML just above,
			// and TestLazyRulesSame compares the rules it describes; without it
			// rules keep gitleaks' ids, high severity and the default fix.
			return &rules.Secrets{TOML: b}
		}
		return m
	})
	l := &lazyRules{base: base, ours: ours, index: [2]*indexed{baseIx, oursIx}, tables: [2]func() (config.ViperConfig, error){baseTables, oursTables}, disabled: ext.DisabledRules, meta: meta,
		keywords: make(map[string][]string, len(base.Rules)+len(ours.Rules)), needs: make(map[string][][]need, len(base.Rules)+len(ours.Rules)), cache: map[string]*screened{}, globals: map[string][]*config.Allowlist{}}
	for i := range 2 {
		ok, err := l.compatible(i)
		if err != nil {
			return nil, fmt.Errorf("built-in secrets rules: %w", err)
		}
		if !ok {
			return nil, nil // compile everything up front instead
		}
	}
	free := map[string]bool{} // a definition without needed literals
	for i, vc := range []config.ViperConfig{base, ours} {
		for _, r := range vc.Rules {
			if i == 0 && slices.Contains(l.disabled, r.ID) {
				continue // off in the default rules (ours may redefine it)
			}
			if _, ok := l.keywords[r.ID]; !ok {
				l.ids = append(l.ids, r.ID)
				l.keywords[r.ID] = nil
			}
			if ix := l.index[i]; ix != nil && ix.needs[r.ID] != nil {
				l.needs[r.ID] = append(l.needs[r.ID], ix.needs[r.ID])
			} else {
				free[r.ID] = true
			}
			for _, k := range r.Keywords {
				l.keywords[r.ID] = append(l.keywords[r.ID], strings.ToLower(k))
			}
		}
	}
	for id := range free {
		delete(l.needs, id)
	}
	l.patterns = sync.OnceValue(l.patternNeeds)
	l.full = sync.OnceValue(func() *engine.Detector {
		rs, err := builtin()
		if err != nil {
			panic(err) // the built-in rules compile: tests cover them
		}
		return builtinDetector(rs)
	})
	return l, nil
})

// compatible reports whether config i (0 gitleaks', 1 ours) can be
// compiled rule by rule: no composite rules (required) and no allowlists
// aimed at named rules. An indexed file's tables are read only if the
// index says one is aimed (indexed.targeted).
func (l *lazyRules) compatible(i int) (bool, error) {
	vc := []config.ViperConfig{l.base, l.ours}[i]
	if ix := l.index[i]; ix == nil || ix.targeted {
		t, err := l.tables[i]()
		if err != nil {
			return false, err
		}
		//lint:ignore SA1019 gitleaks' default config still uses the [allowlist] table.
		vc.AllowList, vc.Allowlists = t.AllowList, t.Allowlists
	}
	return lazyCompatible(vc), nil
}

// lazyCompatible reports whether a config can be compiled rule by rule:
// no composite rules (required) and no allowlists aimed at named rules.
// (An index holds no composite rule: cutBuiltin refuses them.)
func lazyCompatible(vc config.ViperConfig) bool {
	for _, r := range vc.Rules {
		if len(r.Required) > 0 {
			return false
		}
	}
	for _, a := range vc.Allowlists {
		if len(a.TargetRules) > 0 {
			return false
		}
	}
	//lint:ignore SA1019 gitleaks' default config still uses the [allowlist] table.
	if a := vc.AllowList; a != nil && len(a.TargetRules) > 0 {
		return false
	}
	return true
}

// describing returns a rule set that holds the rules' descriptions and
// keywords, for the check's rule list and the strings pass's gate, without
// compiling any regexp.
func (l *lazyRules) describing() *ruleSet {
	cfg := config.Config{Rules: map[string]config.Rule{}}
	for i, vc := range []config.ViperConfig{l.base, l.ours} {
		for _, r := range vc.Rules {
			if i == 0 && slices.Contains(l.disabled, r.ID) {
				continue // off in the default rules
			}
			cr := cfg.Rules[r.ID]
			cr.RuleID = r.ID
			cr.Keywords = l.keywords[r.ID] // for the strings pass's keyword gate (binaryKeywords)
			if r.Description != "" {
				cr.Description = r.Description
			}
			if _, seen := cfg.Rules[r.ID]; !seen {
				cr.SkipReport = r.SkipReport
			}
			cfg.Rules[r.ID] = cr
		}
	}
	return &ruleSet{cfg: cfg, meta: l.meta}
}

// plainFor returns a detector without decoding over the rules that can run
// on raw: those with a keyword in it, or with none, and (need.go) one of
// their needed literals. With specific, only binaryDetector's rules: the
// specific ones that have keywords.
func (l *lazyRules) plainFor(raw string, specific bool) (fragmentDetector, error) {
	lower := strings.ToLower(raw)
	var ids []string
	for _, id := range l.ids {
		kws := l.keywords[id]
		if specific && (specificity(id) == 0 || len(kws) == 0) {
			continue
		}
		if len(kws) == 0 || slices.ContainsFunc(kws, func(k string) bool { return strings.Contains(lower, k) }) {
			if sets, ok := l.needs[id]; ok && !slices.ContainsFunc(sets, func(ns []need) bool { return present(ns, raw, lower) }) {
				continue // its regexp cannot match raw
			}
			ids = append(ids, id)
		}
	}
	key := strings.Join(ids, "\x00")
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.cache[key]; d != nil {
		return d, nil
	}
	keep := func(vc config.ViperConfig, ix *indexed) (config.ViperConfig, error) {
		if ix != nil {
			return ix.rules(ids) // read from their blocks
		}
		out := vc
		out.Rules = vc.Rules[:0:0] // a new slice of gitleaks' unnamed rule type
		for _, r := range vc.Rules {
			if slices.Contains(ids, r.ID) {
				out.Rules = append(out.Rules, r)
			}
		}
		return out, nil
	}
	vb, err := keep(l.base, l.index[0])
	if err != nil {
		return nil, err
	}
	vo, err := keep(l.ours, l.index[1])
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 gitleaks' default config still uses the [allowlist] table.
	vb.AllowList, vb.Allowlists, vo.AllowList, vo.Allowlists = nil, nil, nil, nil
	base, err := translateFew(vb)
	if err != nil {
		return nil, err
	}
	ours, err := translateFew(vo)
	if err != nil {
		return nil, err
	}
	cfg := extend(ours, base, l.disabled)
	d := &screened{bare: keepAllowed(engine.NewDetector(cfg)), cfg: cfg, l: l, allowed: map[string]*engine.Detector{}}
	l.cache[key] = d
	return d, nil
}

// globalAllowlists compiles the global allowlists of both configs, in the
// order extend puts them (ours, then gitleaks'), with only the patterns
// that may match t (allowprune.go); key names what was kept.
func (l *lazyRules) globalAllowlists(t allowTarget) ([]*config.Allowlist, string, error) {
	known := l.patterns()
	var key strings.Builder
	var vcs []config.ViperConfig
	for i, file := range []int{1, 0} { // ours, then gitleaks'
		vc, err := l.tables[file]()
		if err != nil {
			return nil, "", err
		}
		vc.Rules = nil
		vc, k := prunedAllowlists(vc, t, known)
		fmt.Fprintf(&key, "%d:%s;", i, k)
		vcs = append(vcs, vc)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if out, ok := l.globals[key.String()]; ok {
		return out, key.String(), nil
	}
	var out []*config.Allowlist
	for _, vc := range vcs {
		cfg, err := translateSafely(vc)
		if err != nil {
			return nil, "", err
		}
		out = append(out, cfg.Allowlists...)
	}
	l.globals[key.String()] = out
	return out, key.String(), nil
}

// patternNeeds returns the needed literals of the global allowlists'
// patterns as the generated index holds them.
func (l *lazyRules) patternNeeds() map[string][]need {
	out := map[string][]need{}
	for _, ix := range l.index {
		if ix != nil {
			maps.Copy(out, ix.patterns)
		}
	}
	return out
}
