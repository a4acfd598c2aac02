package pickle

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

// TestStringKeys: a string set into a dict carries its key path, however the
// stream builds the dict (issue 37, item 1).
func TestStringKeys(t *testing.T) {
	const s = "the-planted-value-0123"
	type D = hostile.PDict
	many := D{}
	for _, k := range []string{"lr", "epochs", "seed", "output_dir"} {
		many = append(many, k, 1)
	}
	cases := []struct {
		name  string
		v     any
		recon bool
		want  string
	}{
		{"flat", D{"api_key", s}, false, "api_key"},
		{"flat among others", append(D{"name", "run-name-x", "api_key", s}, many...), false, "api_key"},
		{"nested one item", D{"wandb", D{"api_key", s}}, false, "wandb.api_key"},
		{"nested many", D{"project", "proj-name-x", "wandb", append(append(D{}, many...), "api_key", s), "after", 2}, false, "wandb.api_key"},
		{"after a filled sibling", D{"opt", D{"lr", 1, "momentum", 2}, "wandb", D{"api_key", s}}, false, "wandb.api_key"},
		{"three deep, one item each", D{"logger", D{"wandb", D{"api_key", s}}}, false, "logger.wandb.api_key"},
		{"list under a key", D{"keys", hostile.PList{"other-string-x", s}}, false, "keys"},
		{"dicts in a list", D{"loggers", hostile.PList{D{"name", "tensorboard"}, D{"wandb_key", s}}}, false, "loggers.wandb_key"},
		{"namespace (NEWOBJ)", D{"model", hostile.POrdered{"w", 1}, "args", hostile.PNamespace(append(many, "wandb_api_key", s))}, false, "args.wandb_api_key"},
		{"namespace (_reconstructor)", D{"args", hostile.PNamespace(append(many, "hf_token", s))}, true, "args.hf_token"},
		{"ordered dict", D{"hparams", hostile.POrdered{"seed", 1, "cohere_key", s}}, false, "hparams.cohere_key"},
		{"ordered dict one item", D{"hparams", hostile.POrdered{"cohere_key", s}}, false, "hparams.cohere_key"},
		{"omegaconf", D{"cfg", hostile.POmega{"seed", 1, "logger", hostile.POmega{"project", "proj-name-x", "api_key", s}}}, false, "cfg.logger.api_key"},
		{"omegaconf (_reconstructor)", D{"cfg", hostile.POmega{"wandb", hostile.POmega{"api_key", s}}}, true, "cfg.wandb.api_key"},
		{"value memoised, set again later", D{"a", D{"name", s}, "b", D{"api_key", s}}, false, "a.name"},
		{"odd key bytes", D{"my key/\n\"x", s}, false, "my_key___x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := hostile.Pickle(c.v, c.recon)
			r := Walk(bytes.NewReader(data), Limits{})
			if len(r.Problems) > 0 {
				t.Fatalf("problems: %v", r.Problems)
			}
			var got []string
			for _, st := range r.Strings {
				if st.Value == s {
					got = append(got, st.Key)
				}
			}
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("keys of the value: %q, want [%q]; all: %+v", got, c.want, r.Strings)
			}
		})
	}
}

// TestStringKeysBounded: deep nesting keeps the last maxKeyDepth keys, long
// keys are cut, and strings handed over before their key is set stay
// unkeyed (no string is handed over twice).
func TestStringKeysBounded(t *testing.T) {
	const s = "the-planted-value-0123"
	var v any = hostile.PDict{"api_key", s}
	for i := range 20 {
		v = hostile.PDict{string(rune('a' + i)), v}
	}
	r := Walk(bytes.NewReader(hostile.Pickle(v, false)), Limits{})
	if k := r.Strings[len(r.Strings)-1].Key; k != "g.f.e.d.c.b.a.api_key" {
		t.Errorf("deep key %q", k)
	}
	long := strings.Repeat("k", 1000)
	r = Walk(bytes.NewReader(hostile.Pickle(hostile.PDict{long, s}, false)), Limits{})
	for _, st := range r.Strings {
		if st.Value == s && st.Key != long[:maxKeyLen] {
			t.Errorf("long key %q", st.Key)
		}
	}
	// Flushed by the Strings hook between the value and its SETITEMS.
	var handed []String
	w := NewWalker(bytes.NewReader(hostile.Pickle(hostile.PDict{"x", strings.Repeat("v", 60), "api_key", s}, false)), Limits{MaxStringsBytes: 64}, Hooks{Strings: func(ss []String) { handed = append(handed, ss...) }})
	res := w.Run()
	n := 0
	for _, st := range append(handed, res.Strings...) {
		if st.Value == s {
			n++
		}
	}
	if n != 1 {
		t.Errorf("value handed over %d times", n)
	}
}
