package secrets

import (
	"reflect"
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
