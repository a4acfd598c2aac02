package models

import (
	"strings"
	"sync"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
)

// tier is what the rules say about one imported global.
type tier int

const (
	tierUnknown tier = iota
	tierSafe
	tierLibrary
	tierDangerous
)

// verdict classifies one global.
type verdict struct {
	tier tier
	sev  scanners.Severity
	why  string
	// match is the rule entry that matched, as module.name, for the message.
	match string
}

// classifier looks globals up in the pickle rules. It is immutable once
// built (ready), so a Scanner can share it between goroutines.
type classifier struct {
	// load, when set, reads the rules at the first ready.
	load func() (*rules.PickleRules, error)
	once sync.Once
	err  error

	dangerous map[string][]rules.PickleEntry
	safe      map[string]map[string]bool
	library   map[string]bool
}

func newClassifier(r *rules.PickleRules) *classifier {
	c := &classifier{}
	c.fill(r)
	c.once.Do(func() {})
	return c
}

// lazyClassifier reads its rules with load when first used.
func lazyClassifier(load func() (*rules.PickleRules, error)) *classifier {
	return &classifier{load: load}
}

// ready builds the classifier once; it returns the error reading the rules.
func (c *classifier) ready() error {
	c.once.Do(func() {
		r, err := c.load()
		if err != nil {
			c.err = err
			return
		}
		c.fill(r)
	})
	return c.err
}

func (c *classifier) fill(r *rules.PickleRules) {
	c.dangerous = map[string][]rules.PickleEntry{}
	c.safe = map[string]map[string]bool{}
	c.library = map[string]bool{}
	for _, e := range r.Dangerous {
		c.dangerous[e.Module] = append(c.dangerous[e.Module], e)
	}
	for _, e := range r.Safe {
		if c.safe[e.Module] == nil {
			c.safe[e.Module] = map[string]bool{}
		}
		for _, n := range e.Names {
			c.safe[e.Module][n] = true
		}
	}
	for _, e := range r.Library {
		c.library[e.Module] = true
	}
}

// parents returns m and each of its parent packages: a.b.c, a.b, a.
func parents(m string) []string {
	out := []string{m}
	for {
		i := strings.LastIndexByte(m, '.')
		if i < 0 {
			return out
		}
		m = m[:i]
		out = append(out, m)
	}
}

func (c *classifier) dangerousEntry(module, name string) (rules.PickleEntry, bool) {
	for _, m := range parents(module) {
		for _, e := range c.dangerous[m] {
			if len(e.Names) == 0 {
				return e, true
			}
			for _, n := range e.Names {
				if name == n || strings.HasPrefix(name, n+".") {
					return e, true
				}
			}
		}
	}
	return rules.PickleEntry{}, false
}

// classify decides what an import of module.name means. Python resolves a
// dotted name (protocol 4+) attribute by attribute, so ("pathlib",
// "os.system") is os.system: every split of the dotted name is tried as
// module and name, both below the module and on its own, since a module's
// attribute may be another module.
func (c *classifier) classify(module, name string) verdict {
	c.ready() // Scan reports the error; here the rules are then empty
	if c.safe[module][name] {
		return verdict{tier: tierSafe}
	}
	cands := [][2]string{{module, name}}
	parts := strings.Split(name, ".")
	for i := 1; i < len(parts); i++ {
		head, rest := strings.Join(parts[:i], "."), strings.Join(parts[i:], ".")
		cands = append(cands, [2]string{module + "." + head, rest}, [2]string{head, rest})
	}
	// A module path through a dangerous attribute of its parent
	// ("torch.compile", "x": torch.compile is a function, not a module) is
	// judged as that attribute: the import names it, whatever resolves it.
	if mparts := strings.Split(module, "."); len(mparts) > 1 {
		for i := 1; i < len(mparts); i++ {
			cands = append(cands, [2]string{strings.Join(mparts[:i], "."), strings.Join(mparts[i:], ".") + "." + name})
		}
	}
	for _, cd := range cands {
		if e, ok := c.dangerousEntry(cd[0], cd[1]); ok {
			sev := scanners.SeverityCritical
			if e.Severity != "" {
				sev, _ = scanners.ParseSeverity(e.Severity)
			}
			return verdict{tier: tierDangerous, sev: sev, why: e.Why, match: e.Module}
		}
	}
	{
		for _, p := range parts {
			if strings.HasPrefix(p, "__") && strings.HasSuffix(p, "__") && len(p) > 4 {
				return verdict{tier: tierDangerous, sev: scanners.SeverityCritical,
					why: "the dotted name reaches Python internals (" + p + ") through attribute traversal"}
			}
		}
	}
	if len(parts) == 1 {
		for _, m := range parents(module) {
			if c.library[m] {
				return verdict{tier: tierLibrary}
			}
		}
	}
	return verdict{tier: tierUnknown, sev: scanners.SeverityMedium}
}
