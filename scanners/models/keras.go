package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// hdf5 finds the Keras configs (model_config, training_config attributes)
// in an HDF5 file. There is no maintained pure-Go HDF5 reader, and cgo
// bindings to libhdf5 would make the binary depend on a C library, so we do
// not parse HDF5: an attribute holding a string stores it as contiguous
// bytes (in the object header or the global heap), and a Keras config is a
// JSON object starting with {"class_name", so we search the bytes for it
// and decode each JSON object found. Keras writes model_config before the
// weights, but nothing stops a file from holding another config further on,
// so the whole file is searched, up to Limits.MaxSearch (past it: a limit).
func (sc *scan) hdf5(p place, ra io.ReaderAt, size int64) {
	limit := size
	if limit > sc.s.lim.MaxSearch {
		limit = sc.s.lim.MaxSearch
		sc.limit("search limit", p, fmt.Sprintf("HDF5 file%s is larger than the %d MiB searched for Keras configs: a Lambda layer or custom module past it was not seen.", p.in(), sc.s.lim.MaxSearch>>20))
	}
	needle := []byte(`{"class_name"`)
	const chunk = 1 << 20
	buf := make([]byte, chunk+len(needle))
	for off := int64(0); off < limit; off += chunk {
		if sc.ctx.Err() != nil {
			return
		}
		n, _ := ra.ReadAt(buf, off)
		if n <= 0 {
			break
		}
		b := buf[:n]
		for i := 0; i < len(b); {
			j := bytes.Index(b[i:], needle)
			if j < 0 || i+j >= chunk {
				break
			}
			start := off + int64(i+j)
			dec := json.NewDecoder(io.NewSectionReader(ra, start, min(64<<20, size-start)))
			var v any
			if err := dec.Decode(&v); err == nil {
				sc.kerasConfig(p, v, true)
				text, _ := json.Marshal(v)
				sc.strings(p, "Keras model config", text)
				i += j + int(dec.InputOffset())
				if int64(i) > int64(len(b)) {
					// The object ran past this chunk: go on after it.
					off = start + dec.InputOffset() - chunk
					break
				}
				continue
			}
			i += j + 1
		}
	}
}

// kerasJSON checks a .keras archive's config.json or metadata.json.
func (sc *scan) kerasJSON(p place, data []byte) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("Keras config%s is not valid JSON (%v). %s", p.in(), err, ruleUnscannable.Fix), "config json")
		return
	}
	sc.kerasConfig(p, v, false)
	sc.strings(p, "Keras model config", data)
}

func kerasModule(m string) bool {
	for _, k := range []string{"keras", "keras_nlp", "keras_hub", "keras_cv", "tf_keras", "tensorflow.keras", "tensorflow.python.keras"} {
		if m == k || strings.HasPrefix(m, k+".") {
			return true
		}
	}
	return false
}

// kerasConfig walks a Keras config at every depth (a Lambda nested in a
// sub-model escapes scanners that only read the top-level layers).
func (sc *scan) kerasConfig(p place, v any, h5 bool) {
	var walk func(v any, where string, depth int)
	walk = func(v any, where string, depth int) {
		if depth > 64 {
			return
		}
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e, where, depth+1)
			}
		case map[string]any:
			cls, _ := x["class_name"].(string)
			name := where
			if cfg, ok := x["config"].(map[string]any); ok {
				if n, ok := cfg["name"].(string); ok {
					name = n
				}
			}
			if cls == "Lambda" {
				sev := ruleKerasLambda.Severity
				why := "Keras 3 refuses it in safe mode for .keras files, but older Keras and .h5 files run it on load (CVE-2025-9905)"
				if h5 {
					sev = scanners.SeverityCritical
					why = "Keras loads .h5 Lambda layers without honouring safe_mode (CVE-2025-9905), so the code runs on load"
				}
				sc.add(ruleKerasLambda, sev,
					fmt.Sprintf("Keras model%s has a Lambda layer %q: its function is stored as Python bytecode or a function reference; %s. %s", p.in(), name, why, ruleKerasLambda.Fix),
					"Lambda layer "+name)
			}
			if mod, ok := x["module"].(string); ok && mod != "" && !kerasModule(mod) {
				attr := cls
				if cls == "function" {
					if c, ok := x["config"].(string); ok {
						attr = c
					}
				}
				if reg, ok := x["registered_name"].(string); ok && attr == "" {
					attr = reg
				}
				v := sc.s.cls.classify(mod, attr)
				switch v.tier {
				case tierDangerous:
					sc.add(ruleKerasModule, scanners.SeverityCritical,
						fmt.Sprintf("Keras config%s imports %s.%s (in %q): %s; Keras imports config modules on load (CVE-2025-1550). %s", p.in(), mod, attr, name, v.why, ruleKerasModule.Fix),
						fmt.Sprintf("module %s, name %s", mod, attr))
				case tierUnknown:
					sc.add(ruleKerasModule, scanners.SeverityMedium,
						fmt.Sprintf("Keras config%s imports the custom object %s.%s (in %q) from outside Keras: loading the model imports that module and runs its code. %s", p.in(), mod, attr, name, ruleKerasModule.Fix),
						fmt.Sprintf("module %s, name %s", mod, attr))
				}
			}
			for k, e := range x {
				if k == "class_name" || k == "module" {
					continue
				}
				walk(e, name, depth+1)
			}
		}
	}
	walk(v, "", 0)
}
