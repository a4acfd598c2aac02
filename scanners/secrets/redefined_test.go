package secrets

import (
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/mlwarden/mlwarden/rules"
)

// TestRedefinedRules: default rules that rules/secrets.toml disables and
// redefines (for tighter keywords) keep gitleaks' regexp, entropy, secret
// group and description, and every new keyword is a literal of the regexp,
// so that no match is lost; and they still find what they should.
func TestRedefinedRules(t *testing.T) {
	base, _, err := readConfig([]byte(config.DefaultConfig))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := rules.LoadSecrets(rules.SecretsFS())
	if err != nil {
		t.Fatal(err)
	}
	ours, ext, err := readConfig(meta.TOML)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, id := range ext.DisabledRules {
		for _, o := range ours.Rules {
			if o.ID != id {
				continue
			}
			n++
			for _, b := range base.Rules {
				if b.ID != id {
					continue
				}
				if o.Regex != b.Regex || o.Entropy != b.Entropy || o.SecretGroup != b.SecretGroup || o.Description != b.Description {
					t.Errorf("%s: redefinition drifted from gitleaks' rule:\nours %q\ntheirs %q", id, o.Regex, b.Regex)
				}
			}
			for _, k := range o.Keywords {
				if !strings.Contains(strings.ToLower(o.Regex), "(?:"+strings.ToLower(k)+")") {
					t.Errorf("%s: keyword %q is not a required literal of the regexp", id, k)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no redefined rules found")
	}
	s := newScanner(t)
	g := newFake(41)
	key := "test_" + g.str(hexLow, 35)
	fs := scan(t, s, "billing.py", "LOB_API_KEY = \""+key+"\"\n")
	if len(fs) != 1 || fs[0].RuleID != s.described().byID["lob-api-key"].ID {
		t.Errorf("lob key: %+v", fs)
	}
	if fs := scan(t, s, "test_billing.py", "def test_charge():\n    assert charge(\"test_"+g.str(hexLow, 35)+"\")\n"); len(fs) != 0 {
		t.Errorf("no lob, no finding: %+v", fs)
	}
}
