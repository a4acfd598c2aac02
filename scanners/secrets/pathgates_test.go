package secrets

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathGates: the literal-gated path patterns of the built-in global
// allowlists allow exactly the paths gitleaks' PathAllowed does: the
// module's own files (as they would be named in a scan of it), each
// pattern's needed literals in paths of every shape, upper-cased, and
// Windows-style.
func TestPathGates(t *testing.T) {
	rs, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	als := rs.cfg.Allowlists
	g := newPathGates(als).allowed(als)
	var paths []string
	filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, "/.git/") {
			paths = append(paths, strings.TrimPrefix(filepath.ToSlash(p), "../../"))
		}
		return nil
	})
	gated := 0
	for _, a := range als {
		for _, re := range a.Paths {
			ns, ok := needs(re.String())
			if !ok {
				continue
			}
			gated++
			for _, n := range ns {
				for _, p := range []string{n.lit, "a/" + n.lit, n.lit + "/b", "x/" + n.lit + "/y.txt", "x" + n.lit + "x", strings.ToUpper("dir/" + n.lit)} {
					paths = append(paths, p, strings.ReplaceAll(p, "/", "\\"))
				}
			}
		}
	}
	for i, x := range newPathGates(als) {
		if len(als[i].Paths) > 0 && len(x) != len(als[i].Paths) {
			t.Errorf("allowlist %d (%s): %d of %d path patterns run alone", i, als[i].Description, len(x), len(als[i].Paths))
		}
	}
	if gated < 10 {
		t.Fatalf("only %d path patterns gated by literals", gated)
	}
	paths = append(paths, "", "/", "ſ/node_modules", "İ.PNG", "vendor/KEY.json", "a/b/c/go.sum", "x.min.js")
	allowed := 0
	for _, p := range paths {
		for i, a := range als {
			want := a.PathAllowed(p)
			if got := g(i, p); got != want {
				t.Errorf("allowlist %d (%s), path %q: gated %v, gitleaks %v", i, a.Description, p, got, want)
			}
			if want {
				allowed++
			}
		}
	}
	if allowed == 0 {
		t.Fatal("no path allowed: the test compares nothing")
	}
	t.Logf("%d paths, %d patterns gated, %d allowed", len(paths), gated, allowed)
}

// TestPathGatesFlags: gitleaks joins an allowlist's paths without a group
// each, so a top-level (?i) of one pattern reaches those after it, and
// (?-i) ends it; a flag inside a group, a class or an escape does not.
func TestPathGatesFlags(t *testing.T) {
	for _, c := range []struct {
		paths []string
		probe []string
	}{
		{[]string{`(?i)foo`, `bar`}, []string{"BAR", "bar", "FOO", "Bar/x"}},
		{[]string{`(?i)foo`, `(?-i)bar`, `baz`}, []string{"BAR", "BAZ", "baz", "FOO"}},
		{[]string{`(?i:foo)`, `bar`}, []string{"BAR", "bar", "FOO"}},
		{[]string{`x(?i)`, `[(?i)]`, `\(?i\)`, `bar`}, []string{"BAR", "bar", "X", "i", "(?i)"}},
		{[]string{`a(?s)`, `b.c`}, []string{"b\nc", "bxc"}},
		{[]string{`a|(?i)q`, `z`}, []string{"Z", "Q", "a"}},
		{[]string{`[]a(?i)]`, `zz`}, []string{"ZZ", "zz", "]"}},
	} {
		vc, _, err := readBuiltin([]byte("[[allowlists]]\npaths = ['''" + strings.Join(c.paths, "''', '''") + "''']\n"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := translate(vc)
		if err != nil {
			t.Fatal(err)
		}
		g := newPathGates(cfg.Allowlists).allowed(cfg.Allowlists)
		for _, p := range c.probe {
			if got, want := g(0, p), cfg.Allowlists[0].PathAllowed(p); got != want {
				t.Errorf("paths %q, path %q: gated %v, gitleaks %v", c.paths, p, got, want)
			}
		}
	}
}
