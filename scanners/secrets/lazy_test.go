package secrets

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestLazyRulesSame: compiling per input only the rules whose keywords it
// holds finds exactly what compiling every rule does — on every rule's
// positive and negative cases, on code, and on encoded secrets (where the
// full detector is used) — and lists the same rules.
func TestLazyRulesSame(t *testing.T) {
	full := newScanner(t)
	lazy := newScanner(t, WithLazyRules())
	if lazy.lazy == nil {
		t.Fatal("WithLazyRules did not take: the built-in rules were compiled up front")
	}
	key := func(r scanners.Rule) string { return fmt.Sprint(r.ID, r.Severity, r.Title, r.Why, r.Fix) }
	if a, b := full.Rules(), lazy.Rules(); !slices.EqualFunc(a, b, func(x, y scanners.Rule) bool { return key(x) == key(y) }) {
		t.Errorf("rule lists differ: %d vs %d rules", len(a), len(b))
	}
	g := newFake(12)
	type input struct{ path, text string }
	var inputs []input
	for _, c := range ruleCases {
		pos, _ := c.pos(g)
		// And inside a binary file: the strings pass (whose keyword gate
		// lazy rules once left empty, so that it found nothing).
		inputs = append(inputs, input{c.path, pos}, input{c.path, c.neg(g)}, input{"bin/tool", strings.Repeat("\x00\x01", len(pos)) + "\n" + pos + "\n" + strings.Repeat("\x00\x01", len(pos))})
	}
	inputs = append(inputs,
		input{"train.py", codeFiller(g, 300)},
		input{"job.sbatch", "#!/bin/bash\n#SBATCH -N 2\nexport TOKEN=" + base64.StdEncoding.EncodeToString([]byte("HF_TOKEN=hf_"+g.str(alnum, 34))) + "\nsrun python train.py\n"},
		input{"notes.txt", ""},
	)
	show := func(fs []scanners.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s:%d %s %s", f.RuleID, f.Line, f.Secret, f.Message))
		}
		slices.Sort(out)
		return out
	}
	found, inBinary := 0, 0
	for _, in := range inputs {
		want, got := show(scan(t, full, in.path, in.text)), show(scan(t, lazy, in.path, in.text))
		if !slices.Equal(got, want) {
			t.Errorf("%s %.60q:\nlazy %q\nfull %q", in.path, in.text, got, want)
		}
		found += len(want)
		if in.path == "bin/tool" {
			inBinary += len(want)
		}
	}
	if inBinary < len(ruleCases)/2 {
		t.Errorf("only %d findings in %d binary files: the strings pass is not exercised", inBinary, len(ruleCases))
	}
	if found < len(ruleCases) {
		t.Errorf("only %d findings over %d rule cases: the corpus does not exercise the rules", found, len(ruleCases))
	}
}

// TestScreenedAllowlist: the lazy detector runs its few rules without the
// global allowlists first and again with them when something is found; what
// the global allowlists drop (gitleaks' paths and value patterns, ours for
// placeholders) stays dropped, and the same token elsewhere is found.
func TestScreenedAllowlist(t *testing.T) {
	full := newScanner(t)
	lazy := newScanner(t, WithLazyRules())
	g := newFake(21)
	tok := "hf_" + g.str(alnum, 34)
	cases := []struct {
		path, text string
		found      bool
	}{
		{"train.sbatch", "#!/bin/bash\nexport HF_TOKEN=" + tok + "\nsrun python train.py\n", true},
		{"node_modules/hub/index.js", "const HF_TOKEN = '" + tok + "'\n", false},
		{"venv/lib/python3.11/site-packages/hub/x.py", "HF_TOKEN = '" + tok + "'\n", false},
		{"train.sbatch", "#!/bin/bash\nexport HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", false},
		{"deploy.sh", "#!/bin/sh\npassword=\"$DB_PASSWORD_VALUE\"\n", false},
	}
	for _, c := range cases {
		want, got := scan(t, full, c.path, c.text), scan(t, lazy, c.path, c.text)
		if (len(want) > 0) != c.found {
			t.Errorf("%s %.50q: the full detector found %d: the case does not test the allowlists", c.path, c.text, len(want))
		}
		if len(got) != len(want) || len(got) > 0 && got[0].Secret != want[0].Secret {
			t.Errorf("%s %.50q: lazy found %d, full %d", c.path, c.text, len(got), len(want))
		}
	}
}
