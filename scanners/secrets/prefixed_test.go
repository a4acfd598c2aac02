package secrets

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// findingKeys lists every field of gitleaks' findings that the check or a
// report can read, sorted (gitleaks runs rules in map order).
func findingKeys(fs []engine.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %d:%d-%d:%d match=%q secret=%q line=%q e=%.4f tags=%v file=%s commit=%s",
			f.RuleID, f.StartLine, f.StartColumn, f.EndLine, f.EndColumn, f.Match, f.Secret, f.Line, f.Entropy, f.Tags, f.File, f.Commit))
	}
	slices.Sort(out)
	return out
}

// prefixedPair is the plain detector as the check builds it and gitleaks'
// plain detector over the same rules.
func prefixedPair(t testing.TB) (fast, ref fragmentDetector) {
	t.Helper()
	s := newScanner(t)
	fast = s.plain()
	if _, ok := fast.(*prefixedDetector); !ok {
		t.Fatalf("the plain detector is %T, not the prefixed one", fast)
	}
	return fast, keepAllowed(engine.NewDetector(s.rs.cfg))
}

func comparePrefixed(t *testing.T, fast, ref fragmentDetector, name, raw string) int {
	t.Helper()
	f := engine.Fragment{Raw: raw, FilePath: name, StartLine: 1}
	want := findingKeys(ref.DetectContext(context.Background(), f))
	got := findingKeys(fast.DetectContext(context.Background(), f))
	if !slices.Equal(got, want) {
		t.Errorf("%s: the prefixed rules found\n%s\ngitleaks finds\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return len(want)
}

// TestPrefixedRules: most rules with gitleaks' lazy prefix are run by the
// plain detector itself, the generic one among them.
func TestPrefixedRules(t *testing.T) {
	s := newScanner(t)
	d := s.plain().(*prefixedDetector)
	var ids []string
	for _, r := range d.rules {
		ids = append(ids, r.rule.RuleID)
	}
	n, back, gated := 0, 0, 0
	for _, r := range s.rs.cfg.Rules {
		if r.Regex != nil && strings.HasPrefix(r.Regex.String(), lazyPrefixPattern) {
			n++
		}
	}
	for _, r := range d.rules {
		if r.back {
			back++
		}
		if r.near != nil {
			gated++
		}
	}
	t.Logf("%d rules run here (%d of the %d with the lazy prefix, %d with a near condition) of %d", len(ids), back, n, gated, len(s.rs.cfg.Rules))
	if g := d.rules[slices.Index(ids, "generic-api-key")].near; g == nil || g.span != 23 || !slices.Contains(g.lits, "token") || !g.set['='] || g.set['a'] ||
		!g.class['a'] || !g.class['\''] || g.class['('] || g.class['='] {
		t.Errorf("the generic rule's near condition is %+v, want an operator after at most 23 bytes of [ \\t\\w.-\\s'\"] after the keyword", g)
	} else {
		for _, c := range []struct {
			text string
			ok   bool
		}{
			{"token = x", true}, {"api_key: str", true}, {"tokenizer_name_here = f", true}, {"tokenizer, model = load()", true}, {"secret \"\n = x", true},
			{"token(x)", false}, {"tokenizer(model) = x", false}, {"key_with_a_very_long_name_x = 1", false}, {"the key is", false},
		} {
			if got := g.ok(c.text, 0); got != c.ok {
				t.Errorf("near condition on %q: %v, want %v", c.text, got, c.ok)
			}
		}
	}
	for _, id := range []string{"generic-api-key", "lob-api-key", "lob-pub-api-key", "jwt", "vault-service-token", "aws-access-token"} {
		if !slices.Contains(ids, id) {
			t.Errorf("%s is not run by the prefixed detector", id)
		}
	}
	if back < n*9/10 {
		t.Errorf("only %d of the %d prefixed rules run here", back, n)
	}
}

// TestLazyPrefixed: a pattern whose prefix covers a first alternative only
// is not a prefixed one.
func TestLazyPrefixed(t *testing.T) {
	for src, want := range map[string]bool{
		lazyPrefixPattern + `(?:key)=(\w{8})`:     true,
		lazyPrefixPattern + `(?:key)=x|token=(y)`: false,
		lazyPrefixPattern + `key`:                 true,
	} {
		if got := lazyPrefixed(src); got != want {
			t.Errorf("lazyPrefixed(%q) = %v, want %v", src, got, want)
		}
		r := config.Rule{RuleID: "t", Regex: regexp.MustCompile(src), Keywords: []string{"key"}}
		if p, ok := newPrefixedRule(r); ok {
			for _, raw := range []string{"a_key=abcdefgh", "token=y", "x key=x token=y", "ab_token=y"} {
				if got, want := p.findAll(raw), r.Regex.FindAllStringIndex(raw, -1); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%q on %q: findAll = %v, want %v", src, raw, got, want)
				}
			}
		}
	}
}

// TestPrefixedFindAll: findAll returns what the whole pattern's
// FindAllStringIndex returns, for every prefixed rule, on text built to
// sit at the prefix's edges: runs of 49 to 52 word bytes before keywords,
// matches next to each other, keywords in other cases.
func TestPrefixedFindAll(t *testing.T) {
	s := newScanner(t)
	d := s.plain().(*prefixedDetector)
	g := newFake(41)
	for _, r := range d.rules {
		cases := []string{}
		for ci, c := range ruleCases {
			g := newFake(uint64(ci) + 3)
			pos, _ := c.pos(g)
			cases = append(cases, pos)
		}
		for _, k := range r.rule.Keywords {
			k = strings.ToLower(k)
			v := g.str(alnum, 40)
			for _, n := range []int{0, 1, 49, 50, 51, 52} {
				w := g.str(alnum+"_.-", n)
				cases = append(cases,
					w+k+" = \""+v+"\"\n",
					w+strings.ToUpper(k)+"="+v+" "+w+k+": '"+v+"'",
					"x"+w+k+"_"+k+" = "+v+";"+k+"="+v,
					w+"\n"+k+"\n=\n"+v+"\n",
					w+k+"="+v+`\n`+k+"="+v+`\r`+w+k+"="+v,
					// the operator as far after the keyword as the patterns allow, and one further
					k+strings.Repeat("x", 20)+" '\"=\""+v+"\"",
					k+strings.Repeat("x", 21)+" '\"=\""+v+"\"",
					k+strings.Repeat(".", 19)+"\n\n\n:"+v+"\n")
			}
		}
		for _, raw := range cases {
			want := r.rule.Regex.FindAllStringIndex(raw, -1)
			if got := r.findAll(raw); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s on %q: findAll = %v, the pattern gives %v", r.rule.RuleID, raw, got, want)
			}
			var hits []litHit
			d.lits.Each(raw, func(at int, id int32) { hits = append(hits, litHit{int32(at), id}) })
			if got := r.findAllAt(raw, hits); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s on %q: findAllAt = %v, the pattern gives %v", r.rule.RuleID, raw, got, want)
			}
		}
	}
}

// TestPrefixedSame: the plain detector finds, field for field, what
// gitleaks' plain detector over the same rules finds — on every rule's
// generated cases alone and inside code, on the fixtures, and on text with
// the letters that make it hand over to gitleaks.
func TestPrefixedSame(t *testing.T) {
	fast, ref := prefixedPair(t)
	s := newScanner(t)
	binFast, binRef := binaryDetector(s.rs), keepAllowed(engine.NewDetector(binaryConfig(s.rs)))
	g := newFake(43)
	filler := codeFiller(g, 60)
	found := 0
	for ci, c := range ruleCases {
		for seed := uint64(1); seed <= 2; seed++ {
			g := newFake(uint64(ci)*100 + seed)
			pos, _ := c.pos(g)
			for _, body := range []string{pos, c.neg(g), strings.ToUpper(pos)} {
				found += comparePrefixed(t, fast, ref, c.path, body)
				found += comparePrefixed(t, binFast, binRef, c.path+"!strings", body)
				found += comparePrefixed(t, fast, ref, c.path, filler+body+"\n"+filler)
				found += comparePrefixed(t, fast, ref, c.path, "MY_SERVICE_"+body+" "+body)
			}
		}
	}
	key := "api_key = \"" + g.str(alnum, 32) + "\"\n"
	for _, raw := range []string{"\u212aEY_" + key, "ſecret_" + key, "İ " + key, key + key + key} {
		found += comparePrefixed(t, fast, ref, "k.py", raw)
	}
	filepath.WalkDir("../../fixtures", func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<20 {
			found += comparePrefixed(t, fast, ref, p, string(b))
		}
		return nil
	})
	if found < len(ruleCases) {
		t.Errorf("only %d findings over %d cases: the comparison is not exercised", found, len(ruleCases))
	}
	t.Logf("%d findings compared", found)
}

// FuzzPrefixed compares the plain detector with gitleaks' on what the
// fuzzer makes from secrets in code.
func FuzzPrefixed(f *testing.F) {
	g := newFake(47)
	for _, s := range []string{
		"api_key = \"" + g.str(alnum, 32) + "\"\n",
		"x.token: " + g.str(alnum, 20) + "\n",
		"LOB_KEY=test_pub_" + g.hex(31),
		"PASSWORD\n=\n'" + g.str(alnum, 16) + "'",
		codeFiller(g, 4),
	} {
		f.Add(s)
	}
	fast, ref := prefixedPair(f)
	f.Fuzz(func(t *testing.T, raw string) {
		comparePrefixed(t, fast, ref, "f.py", raw)
	})
}
