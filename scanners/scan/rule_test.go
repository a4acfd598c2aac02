package scan_test

import (
	"reflect"
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scan"
)

// TestRuleEveryRule: Rule(id) is the entry of Rules() with that ID, for
// every rule of every check (the secrets check describing one rule, the
// others searched), with lazy secret rules (the sbatch hook's) and without.
func TestRuleEveryRule(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		sc, err := scan.New(scan.Options{LazySecretRules: lazy})
		if err != nil {
			t.Fatal(err)
		}
		list := sc.Rules()
		if len(list) < 300 {
			t.Fatalf("%d rules: not every check", len(list))
		}
		for _, want := range list {
			if got, ok := sc.Rule(want.ID); !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("lazy %v: Rule(%s) = %+v, %v; want %+v", lazy, want.ID, got, ok, want)
			}
		}
		if r, ok := sc.Rule("secrets/no-such-rule"); ok {
			t.Errorf("Rule(secrets/no-such-rule) = %+v", r)
		}
		sc.Close()
	}
}
