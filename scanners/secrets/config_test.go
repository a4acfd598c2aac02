package secrets

import (
	"reflect"
	"slices"
	"testing"

	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/mlwarden/mlwarden/rules"
)

// TestReadBuiltin: readBuiltin (go-toml, for the per-job sbatch hook's
// set-up) reads both built-in configs exactly as viper does, rule by rule,
// allowlists and [extend] included; and a file viper reads differently
// than go-toml would is caught by the comparison.
func TestReadBuiltin(t *testing.T) {
	meta, err := rules.LoadSecrets(rules.SecretsFS())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"gitleaks default": []byte(config.DefaultConfig), "rules/secrets.toml": meta.TOML} {
		want, wantExt, err := readConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		got, gotExt, err := readBuiltin(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got.Rules) < 10 || len(got.Rules) != len(want.Rules) {
			t.Fatalf("%s: %d rules, viper reads %d", name, len(got.Rules), len(want.Rules))
		}
		for i := range want.Rules {
			if !reflect.DeepEqual(got.Rules[i], want.Rules[i]) {
				t.Errorf("%s: rule %s:\n got %+v\nwant %+v", name, want.Rules[i].ID, got.Rules[i], want.Rules[i])
			}
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotExt, wantExt) {
			t.Errorf("%s: read differently than viper reads it", name)
		}
	}
	// The negative case: a value viper's loose typing turns into a list.
	loose := []byte("[[rules]]\nid = \"x\"\nregex = \"x\"\nkeywords = \"one\"\n")
	want, _, err := readConfig(loose)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := readBuiltin(loose); err == nil && reflect.DeepEqual(got, want) {
		t.Errorf("a string for a list reads the same; the comparison above cannot fail")
	}
}

// TestIndexBuiltin: the lazy rules' index of each built-in file reads what
// readBuiltin reads: every rule's id, description, keywords and skipReport
// in order, the tables outside the rules, and each rule whole from its
// block; and it refuses what it cannot cut.
func TestIndexBuiltin(t *testing.T) {
	meta, err := rules.LoadSecrets(rules.SecretsFS())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"gitleaks default": []byte(config.DefaultConfig), "rules/secrets.toml": meta.TOML} {
		want, wantExt, err := readBuiltin(b)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := indexBuiltin(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ix.vc.Rules) != len(want.Rules) || len(want.Rules) < 10 {
			t.Fatalf("%s: %d rules indexed, %d read", name, len(ix.vc.Rules), len(want.Rules))
		}
		var ids []string
		for i, w := range want.Rules {
			g := ix.vc.Rules[i]
			if g.ID != w.ID || g.Description != w.Description || !slices.Equal(g.Keywords, w.Keywords) || g.SkipReport != w.SkipReport {
				t.Errorf("%s: rule %d indexed as %q %q %q %v, read as %q %q %q %v", name, i, g.ID, g.Description, g.Keywords, g.SkipReport, w.ID, w.Description, w.Keywords, w.SkipReport)
			}
			ids = append(ids, w.ID)
		}
		head := want
		head.Rules = nil
		got, gotExt, err := ix.tables()
		if err != nil || !reflect.DeepEqual(got, head) || !reflect.DeepEqual(gotExt, wantExt) || !reflect.DeepEqual(ix.ext, wantExt) {
			t.Errorf("%s: the tables outside [[rules]] read differently (%v)", name, err)
		}
		if ix.targeted != targets(want) {
			t.Errorf("%s: targeted %v, the tables say %v", name, ix.targeted, targets(want))
		}
		all, err := ix.rules(ids)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(all.Rules, want.Rules) || !reflect.DeepEqual(all, config.ViperConfig{Rules: all.Rules}) {
			t.Errorf("%s: the rules read from their blocks differ", name)
		}
		one, err := ix.rules(ids[3:4])
		if err != nil || len(one.Rules) != 1 || !reflect.DeepEqual(one.Rules[0], want.Rules[3]) {
			t.Errorf("%s: one rule's block: %v %d rules", name, err, len(one.Rules))
		}
	}
	if l, err := builtinLazy(); err != nil || l == nil || l.index[0] == nil || l.index[1] == nil {
		t.Errorf("the lazy rules do not use the index: %v", err)
	}
	for _, bad := range []string{
		"[[rules]]\nid = \"a\"\nregex = \"a\"\n[[rules.required]]\nid = \"b\"\n",
		"[rules.allowlist]\nregexes = [\"x\"]\n",
		"[[rules]]\nregex = \"a\"\n",
		"[[rules]]\nid = \"a\"\n[[rules]]\nid = \"a\"\n",
		"[[rules]]\nid = \"a\"\nkeywords = [\n\"a\",\n",
	} {
		if _, err := indexBuiltin([]byte(bad)); err == nil {
			t.Errorf("indexed %q", bad)
		}
	}
}
