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

// TestStringKeysCPython: CPython's own protocol 0 and 1 output (DICT after
// a MARK, SETITEM one item at a time, copy_reg._reconstructor then BUILD),
// as pickle.dumps wrote it for
// {'run': {'wandb': {'api_key': …}}, 'args': argparse.Namespace(seed=1, hf_token=…)}.
func TestStringKeysCPython(t *testing.T) {
	for name, c := range map[string]struct {
		data string
		want map[string]string
	}{
		"protocol 0": {"(dp0\nVrun\np1\n(dp2\nVwandb\np3\n(dp4\nVapi_key\np5\nVthe-planted-value-0123\np6\nsssVargs\np7\nccopy_reg\n_reconstructor\np8\n(cargparse\nNamespace\np9\nc__builtin__\nobject\np10\nNtp11\nRp12\n(dp13\nVseed\np14\nI1\nsVhf_token\np15\nVthe-planted-value-4567\np16\nsbs.",
			map[string]string{"the-planted-value-0123": "run.wandb.api_key", "the-planted-value-4567": "args.hf_token"}},
		"protocol 1": {"}q\x00X\x04\x00\x00\x00argsq\x01ccopy_reg\n_reconstructor\nq\x02(cargparse\nNamespace\nq\x03c__builtin__\nobject\nq\x04Ntq\x05Rq\x06}q\x07(X\x04\x00\x00\x00seedq\x08K\x01X\x08\x00\x00\x00hf_tokenq\tX\x16\x00\x00\x00the-planted-value-4567q\nubs.",
			map[string]string{"the-planted-value-4567": "args.hf_token"}},
	} {
		r := Walk(strings.NewReader(c.data), Limits{})
		got := map[string]string{}
		for _, s := range r.Strings {
			if strings.HasPrefix(s.Value, "the-planted") {
				got[s.Value] = s.Key
			}
		}
		if len(r.Problems) > 0 || len(got) != len(c.want) {
			t.Errorf("%s: keys %v, problems %v", name, got, r.Problems)
		}
		for v, k := range c.want {
			if got[v] != k {
				t.Errorf("%s: %s under %q, want %q", name, v, got[v], k)
			}
		}
	}
}
