package models

import (
	"encoding/json"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
	"github.com/mlwarden/mlwarden/scanners"
)

// TestKerasNames: a Keras config is judged by what it names, whatever the
// shape — module, class_name, registered_name, config.fn or function, a
// nested model at any depth, a nested config kept as a JSON string — and a
// builtins.* path is as dangerous as builtins.eval. The .keras files are
// made by internal/hostile; benign configs stay quiet.
func TestKerasNames(t *testing.T) {
	layer := func(m map[string]any) map[string]any { return m }
	custom := func(cfg map[string]any) map[string]any {
		return layer(map[string]any{"module": "keras.layers", "class_name": "Layer", "config": cfg, "registered_name": nil})
	}
	nestedString := func(l map[string]any) string {
		b, _ := json.Marshal(l)
		return string(b)
	}
	lambda := map[string]any{"module": "keras.layers", "class_name": "Lambda", "config": map[string]any{"name": "deep", "function": map[string]any{"module": "builtins", "class_name": "function", "config": "print"}}}
	crit, high, med := scanners.SeverityCritical, scanners.SeverityHigh, scanners.SeverityMedium
	cases := []struct {
		name    string
		depth   int
		layer   map[string]any
		version string
		want    scanners.Severity // top severity of the keras rules; 0: none
		text    string            // in a finding's message or evidence
	}{
		{"class_name builtins.exec", 2, layer(map[string]any{"class_name": "builtins.exec", "config": map[string]any{"name": "x"}}), "3.9.0", crit, "builtins"},
		{"module builtins, any name", 0, layer(map[string]any{"module": "builtins", "class_name": "function", "config": "print"}), "3.9.0", crit, "builtins.print"},
		{"module builtins dotted", 0, layer(map[string]any{"module": "builtins.print", "class_name": "function", "config": "x"}), "3.9.0", crit, "builtins"},
		{"registered_name os>system", 1, layer(map[string]any{"class_name": "X", "registered_name": "os>system", "config": map[string]any{}}), "3.9.0", crit, "os"},
		{"config.fn subprocess", 1, custom(map[string]any{"name": "c", "fn": "subprocess.check_output"}), "3.9.0", crit, "subprocess"},
		{"config.function os.system", 0, custom(map[string]any{"name": "c", "function": "os.system"}), "3.9.0", crit, "os"},
		{"get_file in config.fn", 1, custom(map[string]any{"name": "c", "fn": "keras.utils.get_file", "origin": "https://example.invalid/x.py", "cache_dir": "/tmp/x"}), "3.9.0", crit, "get_file"},
		{"enable_unsafe_deserialization in config.fn", 0, custom(map[string]any{"name": "c", "fn": "keras.config.enable_unsafe_deserialization"}), "3.9.0", crit, "enable_unsafe_deserialization"},
		{"TorchModuleWrapper dotted", 0, layer(map[string]any{"module": "keras.layers", "class_name": "keras.layers.TorchModuleWrapper", "config": map[string]any{"name": "t"}}), "3.11.1", crit, "TorchModuleWrapper"},
		{"Lambda dotted registered", 0, layer(map[string]any{"module": "keras.layers", "class_name": "X", "registered_name": "keras.layers>Lambda", "config": map[string]any{"name": "l"}}), "3.9.0", high, "Lambda"},
		{"Lambda 80 models deep", 40, lambda, "3.9.0", crit, "builtins.print"},
		{"nested config as a JSON string", 0, custom(map[string]any{"name": "c", "inner": nestedString(lambda)}), "3.9.0", crit, "builtins.print"},
		{"custom module", 0, layer(map[string]any{"module": "my_project.layers", "class_name": "Gate", "config": map[string]any{"name": "g"}}), "3.9.0", med, "my_project"},
		{"benign", 3, layer(map[string]any{"module": "keras.layers", "class_name": "Dense", "config": map[string]any{"name": "d", "units": 4, "activation": "relu"}, "registered_name": nil}), "3.9.0", 0, ""},
		{"benign activation object", 0, layer(map[string]any{"module": "keras.layers", "class_name": "Dense", "config": map[string]any{"name": "d", "activation": map[string]any{"module": "keras.activations", "class_name": "function", "config": "relu", "registered_name": "relu"}}}), "3.9.0", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := hostile.KerasArchive(hostile.KerasSequential(c.depth, c.layer), c.version)
			fs, _ := scanHostile(t, New(), "model.keras", data)
			var top scanners.Severity
			found := c.text == ""
			for _, f := range fs {
				if f.RuleID != ruleKerasModule.ID && f.RuleID != ruleKerasLambda.ID {
					if f.Severity >= high {
						t.Errorf("other finding: %s %s", f.RuleID, f.Message)
					}
					continue
				}
				top = max(top, f.Severity)
				found = found || has([]scanners.Finding{f}, f.RuleID, c.text)
			}
			if top != c.want || !found {
				t.Errorf("top %v, want %v (text %q found %v): %v", top, c.want, c.text, found, fs)
			}
		})
	}
}
