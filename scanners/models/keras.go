package models

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
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
				sc.kerasConfig(p, v, true, "")
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

// kerasJSON checks a .keras archive's config.json (version is
// metadata.json's keras_version, "" when unknown).
func (sc *scan) kerasJSON(p place, data []byte, version string) {
	var v any
	if err := json.Unmarshal(pyJSON(data), &v); err != nil {
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("Keras config%s is not valid JSON (%v). %s", p.in(), err, ruleUnscannable.Fix), "config json")
		return
	}
	sc.kerasConfig(p, v, false, version)
	sc.strings(p, "Keras model config", data)
}

// kerasMetadataVersion reads keras_version from a .keras archive's
// metadata.json ("" when absent).
func kerasMetadataVersion(data []byte) string {
	var md struct {
		Version string `json:"keras_version"`
	}
	json.Unmarshal(pyJSON(data), &md)
	return md.Version
}

// pyJSON turns the NaN, Infinity and -Infinity that Python's json writes
// and reads (Keras configs hold them) into null, which Go's decoder takes,
// leaving strings alone.
func pyJSON(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	out := make([]byte, 0, len(data))
	in := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case in:
			out = append(out, c)
			if c == '\\' && i+1 < len(data) {
				i++
				out = append(out, data[i])
			} else if c == '"' {
				in = false
			}
			continue
		case c == '"':
			in = true
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out, i = append(out, "null"...), i+2
			continue
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out, i = append(out, "null"...), i+8
			continue
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out, i = append(out, "null"...), i+7
			continue
		}
		out = append(out, c)
	}
	return out
}

func kerasModule(m string) bool {
	for _, k := range []string{"keras", "keras_nlp", "keras_hub", "keras_cv", "tf_keras", "tensorflow.keras", "tensorflow.python.keras"} {
		if m == k || strings.HasPrefix(m, k+".") {
			return true
		}
	}
	return false
}

// kerasAtLeast reports whether version (e.g. "3.11.2") is at least
// major.minor.patch; ok is false when the version is unknown.
func kerasAtLeast(version string, want ...int) (at, ok bool) {
	parts := strings.Split(strings.TrimSpace(version), ".")
	if version == "" || len(parts) == 0 {
		return false, false
	}
	for i, w := range want {
		n := 0
		if i < len(parts) {
			var err error
			digits := strings.TrimRightFunc(parts[i], func(r rune) bool { return r < '0' || r > '9' })
			if n, err = strconv.Atoi(digits); err != nil {
				return false, false
			}
		}
		if n != w {
			return n > w, true
		}
	}
	return true, true
}

// kerasFunctionName returns the callable a config entry names: Keras 3
// writes {"module": m, "class_name": "function", "config": name}, Keras 2
// Lambda configs {"function": name, "module": m}, and any object is its
// class_name or registered_name.
func kerasFunctionName(x map[string]any, key string) string {
	str := func(k string) string { s, _ := x[k].(string); return s }
	switch key {
	case "fn_module":
		for _, k := range []string{"fn", "fn_name", "function"} {
			if s := str(k); s != "" {
				return s
			}
		}
	case "output_shape_module":
		return str("output_shape")
	}
	if cls := str("class_name"); cls == "function" {
		return str("config")
	} else if cls != "" {
		return cls
	}
	if f := str("function"); f != "" {
		return f
	}
	return str("registered_name")
}

// lambdaBytecodeNames lists the names a Lambda layer's marshalled code
// object holds that reach the interpreter (os, system, __import__, eval…):
// the strings of a marshal stream are typed and length-prefixed.
func lambdaBytecodeNames(code string) []string {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(code))
	if err != nil {
		return nil
	}
	var out []string
	add := func(s []byte) {
		n := string(s)
		if !isIdent(n) || slices.Contains(out, n) || len(out) >= 8 {
			return
		}
		if pyModules[n] || pyRunners[n] || n == "__import__" || n == "getattr" || n == "open" || n == "compile" {
			out = append(out, n)
		}
	}
	for i := 0; i+1 < len(raw); i++ {
		switch raw[i] &^ 0x80 { // FLAG_REF
		case 'z', 'Z': // short ASCII
			if n := int(raw[i+1]); i+2+n <= len(raw) {
				add(raw[i+2 : i+2+n])
			}
		case 'a', 'A', 'u', 't': // ASCII, unicode, interned: 4-byte length
			if i+5 <= len(raw) {
				if n := int(binary.LittleEndian.Uint32(raw[i+1:])); n <= 64 && i+5+n <= len(raw) {
					add(raw[i+5 : i+5+n])
				}
			}
		}
	}
	return out
}

// moduleName reports whether s reads as a dotted Python module name.
func moduleName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !isIdent(part) {
			return false
		}
	}
	return true
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// kerasConfig walks a Keras config at every depth (a Lambda nested in a
// sub-model escapes scanners that only read the top-level layers). version
// is the Keras version that wrote it, when known.
func (sc *scan) kerasConfig(p place, v any, h5 bool, version string) {
	limited := false
	var walk func(v any, where string, depth int)
	walk = func(v any, where string, depth int) {
		if depth > kerasMaxDepth {
			if !limited {
				limited = true
				sc.limit("Keras config depth limit", p, fmt.Sprintf("Keras config%s nests deeper than %d levels: what is below was not checked.", p.in(), kerasMaxDepth))
			}
			return
		}
		switch x := v.(type) {
		case string:
			// A nested config kept as JSON text (as model_config is in
			// an .h5 file) is a config too.
			if t := strings.TrimSpace(x); strings.HasPrefix(t, "{") && (strings.Contains(t, `"class_name"`) || strings.Contains(t, `"module"`)) {
				var inner any
				if json.Unmarshal(pyJSON([]byte(t)), &inner) == nil {
					walk(inner, where, depth+1)
				}
			}
		case []any:
			for _, e := range x {
				walk(e, where, depth+1)
			}
		case map[string]any:
			cls, _ := x["class_name"].(string)
			reg, _ := x["registered_name"].(string)
			name := where
			cfg, _ := x["config"].(map[string]any)
			if n, ok := cfg["name"].(string); ok {
				name = n
			}
			switch {
			case kerasNamed(cls, reg, "Lambda"):
				sc.kerasLambda(p, name, cfg, h5, version)
			case kerasNamed(cls, reg, "TorchModuleWrapper"):
				sc.kerasTorchWrapper(p, name, cfg, version)
			}
			sc.kerasGadgets(p, x, name, version)
			sc.kerasDotted(p, x, name)
			for _, key := range []string{"module", "fn_module", "output_shape_module"} {
				mod, ok := x[key].(string)
				if !ok || !moduleName(mod) || kerasModule(mod) {
					continue // not a module name (TorchModuleWrapper keeps its pickle under "module")
				}
				attr := kerasFunctionName(x, key)
				v := sc.kerasClassify(mod, attr)
				switch v.tier {
				case tierDangerous:
					sc.add(ruleKerasModule, scanners.SeverityCritical,
						fmt.Sprintf("Keras config%s imports %s.%s (%s, in %q): %s; Keras imports config modules on load and calls what they name (CVE-2025-1550). %s", p.in(), mod, attr, key, name, v.why, ruleKerasModule.Fix),
						fmt.Sprintf("module %s, name %s", mod, attr))
				case tierUnknown:
					sc.add(ruleKerasModule, scanners.SeverityMedium,
						fmt.Sprintf("Keras config%s imports the custom object %s.%s (%s, in %q) from outside Keras: loading the model imports that module and runs its code. %s", p.in(), mod, attr, key, name, ruleKerasModule.Fix),
						fmt.Sprintf("module %s, name %s", mod, attr))
				}
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if k == "class_name" || k == "module" {
					continue
				}
				walk(x[k], name, depth+1)
			}
		}
	}
	walk(v, "", 0)
}

// kerasMaxDepth bounds the nesting of a Keras config walked (Go's JSON
// decoder stops at 10,000; past it: a limit, not a silent pass).
const kerasMaxDepth = 20000

// kerasNamed reports whether a config's class_name or registered_name
// names the Keras class want, however qualified (keras.layers.Lambda,
// keras.src.layers>Lambda).
func kerasNamed(cls, reg, want string) bool {
	return kerasLastName(cls) == want || kerasLastName(reg) == want
}

func kerasLastName(s string) string {
	if i := strings.LastIndexAny(s, ".>"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// kerasBuiltins are the module names of Python's builtins: a Keras config
// has no reason to name any of them, and Keras calls what it names
// (builtins.print is as much a call into the interpreter as builtins.eval).
func kerasBuiltins(mod string) bool {
	top, _, _ := strings.Cut(mod, ".")
	return top == "builtins" || top == "__builtin__" || top == "__builtins__"
}

// kerasClassify judges module.attr named by a Keras config: the pickle
// rules, and any builtins as dangerous.
func (sc *scan) kerasClassify(mod, attr string) verdict {
	v := sc.s.cls.classify(mod, attr)
	if v.tier != tierDangerous && kerasBuiltins(mod) {
		return verdict{tier: tierDangerous, sev: scanners.SeverityCritical, why: "a Python builtin, called by Keras when it deserializes the config; no model config names one"}
	}
	return v
}

// kerasNameFields are the fields of a config object that name a class or
// function.
var kerasNameFields = []string{"class_name", "registered_name", "function", "fn", "fn_name", "output_shape"}

// kerasDotted judges the dotted paths (os.system, builtins.exec,
// subprocess>check_output) that a config object's naming fields hold,
// whether or not it has a module field: Keras 2 resolves dotted names
// through its module objects and Keras 3 custom objects are registered
// as package>name. Unknown modules are left to the module check.
func (sc *scan) kerasDotted(p place, x map[string]any, name string) {
	fields := slices.Clone(kerasNameFields)
	if x["class_name"] == "function" {
		fields = append(fields, "config")
	}
	for _, k := range fields {
		s, _ := x[k].(string)
		i := strings.LastIndexAny(s, ".>")
		if i <= 0 || !moduleName(strings.ReplaceAll(s, ">", ".")) {
			continue
		}
		mod, attr := strings.ReplaceAll(s[:i], ">", "."), s[i+1:]
		if kerasModule(mod) {
			continue
		}
		if v := sc.kerasClassify(mod, attr); v.tier == tierDangerous {
			sc.add(ruleKerasModule, v.sev,
				fmt.Sprintf("Keras config%s names %s (%s, in %q): %s; Keras imports what a config names on load and calls it (CVE-2025-1550). %s", p.in(), s, k, name, v.why, ruleKerasModule.Fix),
				fmt.Sprintf("%s %s", k, s))
		}
	}
}

// kerasLambda reports a Lambda layer. Keras 3 refuses a Lambda whose
// function is Python bytecode when a .keras file is loaded with safe_mode
// (the default since 3.0); .h5 files do not honour safe_mode
// (CVE-2025-9905), Keras 2 has no such check, and anyone may load with
// safe_mode=False. A function reference ({"module": "builtins", "config":
// "exec"}) is judged by the module check.
func (sc *scan) kerasLambda(p place, name string, cfg map[string]any, h5 bool, version string) {
	code := ""
	switch f := cfg["function"].(type) {
	case map[string]any:
		if c, ok := f["config"].(map[string]any); ok && f["class_name"] == "__lambda__" {
			code, _ = c["code"].(string)
		}
	case []any: // Keras 2: [code, defaults, closure]
		if len(f) > 0 {
			code, _ = f[0].(string)
		}
	}
	names := ""
	if ns := lambdaBytecodeNames(code); len(ns) > 0 {
		names = " Its bytecode names " + strings.Join(ns, ", ") + "."
	}
	sev := ruleKerasLambda.Severity
	var why string
	refuses, known := kerasAtLeast(version, 3, 0, 0)
	switch {
	case h5:
		sev = scanners.SeverityCritical
		why = "Keras loads .h5 Lambda layers without honouring safe_mode (CVE-2025-9905), so the code runs on load"
	case refuses:
		why = fmt.Sprintf("the file says Keras %s wrote it, and Keras 3 refuses a Lambda layer's bytecode when loading with safe_mode=True (the default), so it runs only with safe_mode=False, under Keras 2 (tf.keras), or through a safe_mode bypass (CVE-2025-9906)", version)
	case known:
		why = fmt.Sprintf("the file says Keras %s wrote it, which has no safe_mode refusal for it: it runs on load", version)
	default:
		why = "metadata.json gives no Keras version: Keras 3 refuses it in safe mode, older Keras runs it on load"
	}
	sc.add(ruleKerasLambda, sev,
		fmt.Sprintf("Keras model%s has a Lambda layer %q: its function is stored as Python bytecode or a function reference; %s.%s %s", p.in(), name, why, names, ruleKerasLambda.Fix),
		"Lambda layer "+name)
}

// kerasTorchWrapper reports a TorchModuleWrapper layer: Keras 3.11.0 to
// 3.11.2 rebuild its module with torch.load(weights_only=False) even in
// safe mode (CVE-2025-49655); 3.11.3 refuses it in safe mode. The module
// is kept base64-encoded in the config and is scanned as the PyTorch file
// it is.
func (sc *scan) kerasTorchWrapper(p place, name string, cfg map[string]any, version string) {
	fixed, known := kerasAtLeast(version, 3, 11, 3)
	sev, why := scanners.SeverityCritical, "Keras 3.11.0 to 3.11.2 unpickle it with torch.load(weights_only=False) even with safe_mode=True (CVE-2025-49655), and metadata.json does not say a fixed Keras wrote it"
	if fixed {
		sev, why = scanners.SeverityHigh, fmt.Sprintf("Keras %s refuses it in safe mode, but loading with safe_mode=False unpickles it with torch.load(weights_only=False) (CVE-2025-49655)", version)
	} else if known {
		why = fmt.Sprintf("the file says Keras %s wrote it; Keras 3.11.0 to 3.11.2 unpickle it with torch.load(weights_only=False) even with safe_mode=True (CVE-2025-49655)", version)
	}
	sc.add(ruleKerasModule, sev,
		fmt.Sprintf("Keras model%s has a TorchModuleWrapper layer %q: its PyTorch module is a pickle stored in the config; %s. %s", p.in(), name, why, ruleKerasModule.Fix),
		"TorchModuleWrapper layer "+name)
	if m, ok := cfg["module"].(string); ok {
		if raw, err := base64.StdEncoding.DecodeString(m); err == nil && len(raw) > 0 {
			sc.content(p.child(fmt.Sprintf("(TorchModuleWrapper %q module, base64)", name)), bytes.NewReader(raw), int64(len(raw)), "module.pt", 1)
		}
	}
}

// kerasGadgets reports config entries that call Keras's own functions
// against the safe_mode design: keras.utils.get_file downloads a URL or
// writes a path outside the model (CVE-2025-8747, Keras 3.0.0 to 3.10.0),
// and keras.config.enable_unsafe_deserialization turns safe mode off for
// the rest of the load (CVE-2025-9906, fixed in 3.11.0).
func (sc *scan) kerasGadgets(p place, x map[string]any, name, version string) {
	mod, _ := x["module"].(string)
	names := []string{kerasFunctionName(x, "module")}
	for _, k := range kerasNameFields {
		if s, ok := x[k].(string); ok {
			names = append(names, s)
		}
	}
	is := func(f string) bool {
		for _, n := range names {
			if n == f || kerasLastName(n) == f {
				return true
			}
		}
		return false
	}
	fixed, _ := kerasAtLeast(version, 3, 11, 0)
	after := ""
	if fixed {
		after = fmt.Sprintf(" The file says Keras %s wrote it, which refuses this in safe mode; loading with safe_mode=False still runs it.", version)
	}
	if mod != "" && !kerasModule(mod) {
		return
	}
	switch {
	case is("enable_unsafe_deserialization"):
		sev := scanners.SeverityCritical
		if fixed {
			sev = scanners.SeverityHigh
		}
		sc.add(ruleKerasModule, sev,
			fmt.Sprintf("Keras config%s calls keras.config.enable_unsafe_deserialization (in %q): loading the model turns safe mode off for everything after it, so Lambda bytecode and arbitrary modules then run (CVE-2025-9906).%s %s", p.in(), name, after, ruleKerasModule.Fix),
			"enable_unsafe_deserialization in "+name)
	case is("get_file"):
		cfg, ok := x["config"].(map[string]any)
		if !ok {
			cfg = x // named in config.fn: its arguments beside it
		}
		var outside []string
		for _, k := range []string{"origin", "fname", "cache_dir", "cache_subdir", "file_hash"} {
			s, _ := cfg[k].(string)
			if s == "" {
				continue
			}
			if strings.Contains(s, "://") {
				outside = append(outside, fmt.Sprintf("%s %q (a URL)", k, s))
			} else if bad, why := escapes(s); bad || strings.HasPrefix(s, "~") {
				if why == "" {
					why = "is in a home directory"
				}
				outside = append(outside, fmt.Sprintf("%s %q (%s)", k, s, why))
			}
		}
		sev := scanners.SeverityHigh
		what := "with arguments mlwarden could not read"
		if len(outside) > 0 {
			what = "with " + strings.Join(outside, ", ")
			if !fixed {
				sev = scanners.SeverityCritical
			}
		}
		sc.add(ruleKerasModule, sev,
			fmt.Sprintf("Keras config%s calls keras.utils.get_file (in %q) %s: loading the model downloads a file and writes it where the config says, outside the model, which overwrites code or configuration that runs later; Keras 3.0.0 to 3.10.0 allow it in safe mode (CVE-2025-8747).%s %s", p.in(), name, what, after, ruleKerasModule.Fix),
			"get_file in "+name)
	}
}
