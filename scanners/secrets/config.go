package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/logging"

	"github.com/mlwarden/mlwarden/rules"
)

// ruleSet is a compiled gitleaks config plus mlwarden's metadata. It is
// immutable once built.
type ruleSet struct {
	cfg config.Config
	// meta returns the metadata; lazy rules read it at first use (a clean
	// sbatch job reports no rule).
	meta func() *rules.Secrets
}

// knownMeta returns m as a ruleSet's meta.
func knownMeta(m *rules.Secrets) func() *rules.Secrets { return func() *rules.Secrets { return m } }

// builtin is the default gitleaks config extended with rules/secrets.toml,
// compiled once per process: compiling ~250 regexps is most of the cost of a
// one-file run, and the result is never written to.
var builtin = sync.OnceValues(func() (*ruleSet, error) {
	// gitleaks logs through a package-level zerolog logger to stderr; a
	// library must never print, and its debug lines can carry secrets.
	logging.Logger = logging.Logger.Level(zerolog.Disabled)

	base, _, err := translated(readBuiltin([]byte(config.DefaultConfig)))
	if err != nil {
		return nil, fmt.Errorf("gitleaks default config: %w", err)
	}
	meta, err := rules.LoadSecrets(rules.SecretsFS())
	if err != nil {
		return nil, err
	}
	ours, ext, err := translated(readBuiltin(meta.TOML))
	if err != nil {
		return nil, fmt.Errorf("built-in secrets rules: %w", err)
	}
	if !ext.UseDefault {
		return nil, fmt.Errorf("built-in secrets rules: [extend] useDefault must be true")
	}
	return &ruleSet{cfg: extend(ours, base, ext.DisabledRules), meta: knownMeta(meta)}, nil
})

// withUserFile returns rs extended by the user's rules file at path.
func (rs *ruleSet) withUserFile(path string) (*ruleSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets config: %w", err)
	}
	meta, err := rules.ParseSecrets(b)
	if err != nil {
		return nil, fmt.Errorf("secrets config %s: %w", path, err)
	}
	user, ext, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("secrets config %s: %w", path, err)
	}
	if ext.Path != "" || ext.URL != "" {
		return nil, fmt.Errorf("secrets config %s: [extend] path/url is not supported: the file always extends mlwarden's built-in rules", path)
	}
	merged := &rules.Secrets{TOML: b, Names: map[string]string{}, Severity: map[string]string{}, Fix: map[string]string{}}
	for _, m := range []*rules.Secrets{rs.meta(), meta} {
		for k, v := range m.Names {
			merged.Names[k] = v
		}
		for k, v := range m.Severity {
			merged.Severity[k] = v
		}
		for k, v := range m.Fix {
			merged.Fix[k] = v
		}
	}
	return &ruleSet{cfg: extend(user, rs.cfg, ext.DisabledRules), meta: knownMeta(merged)}, nil
}

// parseConfig reads one gitleaks config with gitleaks' own translation
// (regexps, allowlists, validation). The [extend] table is returned, not
// followed: gitleaks follows it through the global viper instance and a
// process-wide depth counter that never resets, so a second load in the same
// process would silently skip validation and targeted allowlists. extend()
// below merges instead, with gitleaks' merge rules.
func parseConfig(b []byte) (cfg config.Config, ext config.Extend, err error) {
	return translated(readConfig(b))
}

// translated compiles a config readConfig or readBuiltin read.
func translated(vc config.ViperConfig, ext config.Extend, err error) (config.Config, config.Extend, error) {
	if err != nil {
		return config.Config{}, ext, err
	}
	cfg, err := translateSafely(vc)
	return cfg, ext, err
}

// readConfig reads one gitleaks config without compiling it; its [extend]
// table is returned apart.
func readConfig(b []byte) (vc config.ViperConfig, ext config.Extend, err error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		return vc, ext, err
	}
	if err := v.Unmarshal(&vc); err != nil {
		return vc, ext, err
	}
	ext = vc.Extend
	vc.Extend = config.Extend{}
	return vc, ext, nil
}

// readBuiltin is readConfig for the built-in configs (gitleaks' default
// and rules/secrets.toml): go-toml straight into gitleaks' ViperConfig
// instead of viper's map and mapstructure, which took most of a
// one-script run's set-up (about 20 ms against 1.5 ms). It reads them
// exactly as viper does (TestReadBuiltin); a user's rules file still goes
// through viper, whose loose typing gitleaks' users may rely on.
func readBuiltin(b []byte) (vc config.ViperConfig, ext config.Extend, err error) {
	if err := toml.Unmarshal(b, &vc); err != nil {
		return vc, ext, err
	}
	ext = vc.Extend
	vc.Extend = config.Extend{}
	return vc, ext, nil
}

// translateSafely is translate with a panic (Translate compiles regexps
// with MustCompile) turned into an error.
func translateSafely(vc config.ViperConfig) (cfg config.Config, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("invalid rule: %v", p)
		}
	}()
	return translate(vc)
}

// translate is vc.Translate() run on slices of the rules at once: compiling
// gitleaks' ~220 regexps is most of a one-file run's time, and each rule
// compiles independently. The global allowlists go with the first slice.
func translate(vc config.ViperConfig) (config.Config, error) {
	n := min(runtime.GOMAXPROCS(0), 8)
	targeted := false
	for _, a := range vc.Allowlists {
		targeted = targeted || len(a.TargetRules) > 0
	}
	if n < 2 || len(vc.Rules) < 32 || targeted {
		// Allowlists aimed at rules must see every rule.
		return vc.Translate()
	}
	parts := make([]config.Config, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		part := vc
		part.Rules = vc.Rules[i*len(vc.Rules)/n : (i+1)*len(vc.Rules)/n]
		if i > 0 {
			//lint:ignore SA1019 the deprecated [allowlist] table is what gitleaks' default config uses.
			part.AllowList, part.Allowlists = nil, nil
		}
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("invalid rule: %v", p)
				}
			}()
			parts[i], errs[i] = part.Translate()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return config.Config{}, err
	}
	cfg := parts[0]
	for _, p := range parts[1:] {
		for id, r := range p.Rules {
			cfg.Rules[id] = r
		}
		for k := range p.Keywords {
			cfg.Keywords[k] = struct{}{}
		}
		cfg.OrderedRules = append(cfg.OrderedRules, p.OrderedRules...)
	}
	return cfg, nil
}

// extend returns child extended by base, as gitleaks' Config.extend does:
// base rules are added unless disabled; a child rule with a base rule's id
// overrides its description, entropy, secret group, regex and path, and adds
// its tags, keywords and allowlists; global allowlists are appended.
func extend(child, base config.Config, disabled []string) config.Config {
	out := config.Config{
		Title:       child.Title,
		Description: child.Description,
		Path:        child.Path,
		Rules:       map[string]config.Rule{},
		Keywords:    map[string]struct{}{},
	}
	off := map[string]bool{}
	for _, id := range disabled {
		off[id] = true
	}
	for id, r := range base.Rules {
		if off[id] {
			continue
		}
		if c, ok := child.Rules[id]; ok {
			if c.Description != "" {
				r.Description = c.Description
			}
			if c.Entropy != 0 {
				r.Entropy = c.Entropy
			}
			if c.SecretGroup != 0 {
				r.SecretGroup = c.SecretGroup
			}
			if c.Regex != nil {
				r.Regex = c.Regex
			}
			if c.Path != nil {
				r.Path = c.Path
			}
			r.Tags = append(append([]string{}, r.Tags...), c.Tags...)
			r.Keywords = append(append([]string{}, r.Keywords...), c.Keywords...)
			r.Allowlists = append(append(r.Allowlists[:0:0], r.Allowlists...), c.Allowlists...)
		}
		out.Rules[id] = r
	}
	for id, r := range child.Rules {
		if _, ok := out.Rules[id]; !ok {
			out.Rules[id] = r
		}
	}
	for id, r := range out.Rules {
		out.OrderedRules = append(out.OrderedRules, id)
		for _, k := range r.Keywords {
			out.Keywords[k] = struct{}{}
		}
	}
	sort.Strings(out.OrderedRules)
	out.Allowlists = append(append(out.Allowlists, child.Allowlists...), base.Allowlists...)
	return out
}
