package models

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
)

// Chat templates are Jinja2 rendered by the serving runtime: transformers'
// apply_chat_template (an ImmutableSandboxedEnvironment), llama.cpp's minja,
// llama-cpp-python before 0.2.72 and other servers without a sandbox
// (CVE-2024-34359). A template that walks Python attributes from a value it
// can reach (a string, a Jinja global such as cycler, joiner, namespace,
// lipsum or range) to __globals__, __builtins__ or __subclasses__ runs any
// code in a runtime without the sandbox, and the sandbox itself has had
// escapes (str.format, CVE-2016-10745 and CVE-2019-10906; |attr('format'),
// CVE-2024-56326). No chat template needs any of it: they read message
// fields, loop and concatenate.
//
// The template is parsed (jinja.go) and evaluated abstractly: string
// constants are folded through ~, +, *, %, slicing, the filters and string
// methods that rebuild text (join, format, replace, reverse, lower, first,
// list, …) and through {% set %}, namespace attributes, loop variables over
// literal lists and macro parameters, so that "__cla" ~ "ss__",
// "%c%c"|format(95,95) or dict(__class__=1)|first name the attribute they
// spell. What is checked is where a name reaches an attribute: .name,
// [key], |attr(key), map/selectattr/sort(attribute=key), str.format fields.

// templateHit is one gadget found in a template.
type templateHit struct {
	sev  scanners.Severity
	what string // the gadget, e.g. `attribute __globals__`
	why  string
	off  int // byte offset in the template
}

// jinjaGlobals are the functions Jinja2 and transformers put in a
// template's namespace: their attributes lead to Python internals
// (cycler.__init__.__globals__), and no template reads them.
var jinjaGlobals = map[string]bool{
	"cycler": true, "joiner": true, "namespace": true, "lipsum": true, "range": true, "dict": true,
	"self": true, "raise_exception": true, "strftime_now": true, "url_for": true, "config": true,
	"request": true, "get_flashed_messages": true, "session": true, "g": true, "loop": true,
}

// loopAttrs are what a template reads of loop (a LoopContext).
var loopAttrs = map[string]bool{
	"index": true, "index0": true, "revindex": true, "revindex0": true, "first": true, "last": true,
	"length": true, "depth": true, "depth0": true, "previtem": true, "nextitem": true, "cycle": true, "changed": true,
}

// pyModules are module names that a template can only name if it reached
// Python internals (x.__globals__.os) or if the runtime exposes them.
var pyModules = map[string]bool{
	"os": true, "sys": true, "subprocess": true, "builtins": true, "__builtins__": true, "importlib": true,
	"posix": true, "nt": true, "pty": true, "socket": true, "shutil": true, "pickle": true, "marshal": true,
	"ctypes": true, "modules": true,
}

// pyRunners are attributes that run commands or code when called.
var pyRunners = map[string]bool{
	"popen": true, "system": true, "Popen": true, "check_output": true, "check_call": true, "getoutput": true,
	"getstatusoutput": true, "spawnl": true, "spawnle": true, "spawnlp": true, "spawnv": true, "spawnve": true,
	"spawnvp": true, "posix_spawn": true, "execl": true, "execle": true, "execlp": true, "execv": true,
	"execve": true, "execvp": true, "execvpe": true, "import_module": true, "load_module": true, "eval": true,
	"exec": true, "run_path": true, "run_module": true,
}

// pyInternals are attribute names without underscores that are Python
// internals (frames, code, Python 2 function attributes).
var pyInternals = map[string]bool{
	"mro": true, "func_globals": true, "func_code": true, "func_closure": true, "func_defaults": true,
	"f_globals": true, "f_locals": true, "f_builtins": true, "f_back": true, "f_code": true, "gi_frame": true,
	"gi_code": true, "cr_frame": true, "cr_code": true, "ag_frame": true, "ag_code": true, "tb_frame": true,
	"tb_next": true, "co_code": true, "co_consts": true, "co_names": true, "im_func": true, "im_self": true,
	"im_class": true,
}

func isDunder(s string) bool {
	return len(s) > 4 && strings.HasPrefix(s, "__") && strings.HasSuffix(s, "__")
}

// attrDanger judges an attribute name a template reaches; called says
// whether the attribute is called.
func attrDanger(name string, called bool) (scanners.Severity, string, bool) {
	switch {
	case isDunder(name):
		return scanners.SeverityCritical, "a Python internal attribute, the first step of every escape from a template to the interpreter", true
	case pyInternals[name] || name == "_TemplateReference__context" || strings.HasSuffix(name, "__context"):
		return scanners.SeverityCritical, "a Python internal attribute (frames, code objects, function globals)", true
	case pyModules[name]:
		return scanners.SeverityCritical, "a Python module reached as an attribute (through __globals__ or a runtime that exposes it)", true
	case pyRunners[name] && called:
		return scanners.SeverityCritical, "a call that runs a command or code", true
	case strings.HasPrefix(name, "_"):
		return scanners.SeverityHigh, "a private attribute: Jinja's sandbox refuses every attribute that starts with an underscore, and no chat template reads one", true
	}
	return 0, "", false
}

// jval is what the analysis knows about a value.
type jval struct {
	strs    []string // the strings it may be (when known)
	items   []jval   // a list or tuple literal's items
	keys    []string // a dict's keys (literal or dict(k=…))
	glob    string   // a Jinja global function, uncalled
	num     int64
	isNum   bool
	unknown bool // it may be something not listed
	ns      string
	// attrs are a namespace(...)'s attributes, copied to ns.x in the
	// environment when it is assigned.
	attrs map[string]jval
	// subset: items are what the value may hold, not in order (a select,
	// a sort): its first item may be any of them.
	subset bool
	isBool bool // true or false (num 1 or 0)
}

const (
	jvalMaxStrs  = 32
	jvalMaxLen   = 256
	jvalMaxKeys  = 64  // a dict's keys kept (dict(a=1, …)|join spells with them)
	jvalMaxItems = 128 // a list's items kept
)

func jstr(s string) jval { return jval{strs: []string{s}} }

var jUnknown = jval{unknown: true}

func (v jval) known() bool { return len(v.strs) > 0 && !v.unknown }

func (e *templateEval) addStr(out []string, s string) []string {
	if len(s) > jvalMaxLen || len(out) >= jvalMaxStrs || slices.Contains(out, s) {
		return out
	}
	if !e.spend(len(s) + 16) {
		return out
	}
	return append(out, s)
}

// addKey adds a dict key, as addStr adds a string: keys are bound, kept
// once, and counted in the work limit ({% set x = x %} forty times had
// doubled a dict's key list forty times: a fatal out-of-memory).
func (e *templateEval) addKey(out []string, k string) []string {
	if len(k) > jvalMaxLen || len(out) >= jvalMaxKeys || slices.Contains(out, k) {
		return out
	}
	if !e.spend(len(k) + 16) {
		return out
	}
	return append(out, k)
}

// addItems appends a list's items to out, bound and counted like strings.
func (e *templateEval) addItems(out []jval, items ...jval) []jval {
	for _, it := range items {
		if len(out) >= jvalMaxItems || !e.spend(32) {
			return out
		}
		out = append(out, it)
	}
	return out
}

// spend counts n units of work; false once the limit is reached.
func (e *templateEval) spend(n int) bool {
	e.work += n
	if e.work > templateMaxWork {
		e.over = true
		return false
	}
	return true
}

// templateMaxWork bounds the bytes of strings, keys and items one
// template's evaluation folds (a template of chained concatenations could
// otherwise cost minutes); past it nothing more is folded, and the scan
// reports a limit.
const templateMaxWork = 32 << 20

func (e *templateEval) union(a, b jval) jval {
	out := jval{unknown: a.unknown || b.unknown, glob: a.glob, ns: a.ns}
	if out.glob == "" {
		out.glob = b.glob
	}
	if out.ns == "" {
		out.ns = b.ns
	}
	for _, s := range a.strs {
		out.strs = e.addStr(out.strs, s)
	}
	for _, s := range b.strs {
		out.strs = e.addStr(out.strs, s)
	}
	out.items = e.addItems(e.addItems(nil, a.items...), b.items...)
	for _, k := range a.keys {
		out.keys = e.addKey(out.keys, k)
	}
	for _, k := range b.keys {
		out.keys = e.addKey(out.keys, k)
	}
	if len(a.attrs)+len(b.attrs) > 0 {
		out.attrs = map[string]jval{}
		for _, m := range []map[string]jval{a.attrs, b.attrs} {
			for k, v := range m {
				if e.spend(len(k) + 16) {
					out.attrs[k] = e.union(out.attrs[k], v)
				}
			}
		}
	}
	if a.isNum && !b.isNum && len(b.strs) == 0 {
		out.num, out.isNum = a.num, true
	}
	if b.isNum && !a.isNum && len(a.strs) == 0 {
		out.num, out.isNum = b.num, true
	}
	return out
}

// cross applies f to every pair of the strings of a and b.
func (e *templateEval) cross(a, b jval, f func(x, y string) string) jval {
	if len(a.strs) == 0 || len(b.strs) == 0 {
		return jUnknown
	}
	out := jval{unknown: a.unknown || b.unknown}
	for _, x := range a.strs {
		for _, y := range b.strs {
			out.strs = e.addStr(out.strs, f(x, y))
		}
	}
	return out
}

func (e *templateEval) mapStrs(v jval, f func(string) string) jval {
	if len(v.strs) == 0 {
		return jval{unknown: true, items: v.items, keys: v.keys}
	}
	out := jval{unknown: v.unknown}
	for _, s := range v.strs {
		out.strs = e.addStr(out.strs, f(s))
	}
	return out
}

// elems returns what iterating v gives: a list's items, a dict's keys, a
// string's characters.
func (e *templateEval) elems(v jval) jval {
	out := jval{unknown: v.unknown || len(v.items) == 0 && len(v.keys) == 0 && len(v.strs) == 0}
	for _, it := range v.items {
		out = e.union(out, it)
	}
	for _, k := range v.keys {
		out.strs = e.addStr(out.strs, k)
	}
	for _, s := range v.strs {
		for _, r := range s {
			out.strs = e.addStr(out.strs, string(r))
		}
	}
	return out
}

// joined returns the strings a join of v with sep gives.
func (e *templateEval) joined(v jval, sep string) jval {
	switch {
	case len(v.items) > 0 && v.subset:
		return jUnknown
	case len(v.items) > 0:
		acc := jstr("")
		for i, it := range v.items {
			if i > 0 {
				acc = e.cross(acc, jstr(sep), func(x, y string) string { return x + y })
			}
			acc = e.cross(acc, it, func(x, y string) string { return x + y })
		}
		return acc
	case len(v.keys) > 0:
		return jstr(strings.Join(v.keys, sep))
	case len(v.strs) > 0:
		return e.mapStrs(v, func(s string) string {
			rs := []rune(s)
			parts := make([]string, len(rs))
			for i, r := range rs {
				parts[i] = string(r)
			}
			return strings.Join(parts, sep)
		})
	}
	return jUnknown
}

// pyPercent formats s % args the way Python does for %s, %r, %c, %d, %i
// and %%; anything else leaves the result unknown.
func pyPercent(s string, args []jval) (string, bool) {
	var b strings.Builder
	k := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i >= len(s) {
			return "", false
		}
		if s[i] == '%' {
			b.WriteByte('%')
			continue
		}
		if k >= len(args) {
			return "", false
		}
		a := args[k]
		k++
		switch s[i] {
		case 's', 'r':
			switch {
			case len(a.strs) == 1 && !a.unknown:
				b.WriteString(a.strs[0])
			case a.isNum:
				b.WriteString(strconv.FormatInt(a.num, 10))
			default:
				return "", false
			}
		case 'c':
			switch {
			case a.isNum && a.num >= 0 && a.num <= unicode.MaxRune:
				b.WriteRune(rune(a.num))
			case len(a.strs) == 1 && !a.unknown:
				b.WriteString(a.strs[0])
			default:
				return "", false
			}
		case 'd', 'i':
			if !a.isNum {
				return "", false
			}
			b.WriteString(strconv.FormatInt(a.num, 10))
		default:
			return "", false
		}
	}
	return b.String(), true
}

// pyFormat formats s.format(args) for plain {} / {0} fields; fields with
// attribute or index access are reported by formatFields, not folded.
func pyFormat(s string, args []jval) (string, bool) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "{{"), strings.HasPrefix(s[i:], "}}"):
			b.WriteByte(s[i])
			i++
		case s[i] == '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return "", false
			}
			field := s[i+1 : i+j]
			n := auto
			if field == "" {
				auto++
			} else if v, err := strconv.Atoi(field); err == nil {
				n = v
			} else {
				return "", false
			}
			if n >= len(args) || len(args[n].strs) != 1 || args[n].unknown {
				return "", false
			}
			b.WriteString(args[n].strs[0])
			i += j
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), true
}

// formatFields returns the attribute and index names str.format reaches
// through the fields of s ({0.__class__}, {x[__globals__]}).
func formatFields(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			i++
			continue
		}
		j := strings.IndexAny(s[i:], "}!:")
		if j < 0 {
			return out
		}
		field := s[i+1 : i+j]
		for _, sep := range []string{".", "["} {
			field = strings.ReplaceAll(field, sep, "\x00")
		}
		parts := strings.Split(strings.ReplaceAll(field, "]", ""), "\x00")
		out = append(out, parts[1:]...)
		i += j
	}
	return out
}

// templateEval walks a parsed template.
type templateEval struct {
	work   int
	over   bool
	env    map[string]jval
	macros map[string][]jkwarg
	report bool
	hits   []templateHit
	seen   map[string]bool
	tpl    *templateTree // the template's blocks, for rendering them
	rs     renderState
}

func (e *templateEval) hit(sev scanners.Severity, what, why string, off int) {
	if !e.report {
		return
	}
	key := what + "\x00" + sev.String()
	if e.seen[key] {
		return
	}
	e.seen[key] = true
	e.hits = append(e.hits, templateHit{sev: sev, what: what, why: why, off: off})
}

// attr checks that v reaches attribute name (one of the strings of key) of
// obj; how is ".", "[]", "|attr" …
func (e *templateEval) attr(obj jval, key jval, how string, called bool, off int) {
	for _, name := range key.strs {
		if sev, why, bad := attrDanger(name, called); bad {
			e.hit(sev, fmt.Sprintf("%s %s", how, name), why, off)
		} else if obj.glob != "" && !(obj.glob == "self" && called) && !(obj.glob == "loop" && loopAttrs[name] && how == "attribute") {
			e.hit(scanners.SeverityHigh, fmt.Sprintf("%s %s of the global %s", how, name, obj.glob),
				"it walks the attributes of a Jinja global function object itself, which leads to its module's globals; no template reads them", off)
		} else if (name == "format" || name == "format_map") && how == "|attr" {
			e.hit(scanners.SeverityCritical, "|attr("+strconv.Quote(name)+")",
				"str.format reached through the attr filter escapes Jinja's sandbox (CVE-2024-56326)", off)
		}
	}
}

func setTarget(e *templateEval, t *jnode, v jval) {
	switch t.kind {
	case jnName:
		e.env[t.name] = e.union(e.env[t.name], v)
		for k, a := range v.attrs {
			e.env[t.name+"."+k] = e.union(e.env[t.name+"."+k], a)
		}
	case jnTuple:
		for _, x := range t.args {
			setTarget(e, x, e.elems(v))
		}
	case jnGetattr:
		if t.x != nil && t.x.kind == jnName {
			k := t.x.name + "." + t.name
			e.env[k] = e.union(e.env[k], v)
		}
	}
}

func (e *templateEval) stmt(st *jstmt) {
	vals := make([]jval, len(st.exprs))
	for i, x := range st.exprs {
		vals[i] = e.eval(x, false)
	}
	switch st.keyword {
	case "set", "with":
		for i, t := range st.targets {
			v := jUnknown
			switch {
			case st.keyword == "with" && i < len(vals):
				v = vals[i]
			case st.keyword == "set" && len(vals) > 0:
				v = vals[0]
			case st.keyword == "set" && st.block && len(e.rs.hole) > 0:
				v = e.rs.hole[len(e.rs.hole)-1]
			}
			setTarget(e, t, v)
		}
	case "for":
		if len(st.targets) > 0 && len(vals) > 0 {
			setTarget(e, st.targets[0], e.elems(vals[0]))
		}
	case "macro":
		e.macros[st.name] = st.params
		for _, prm := range st.params {
			v := jUnknown
			if prm.val != nil {
				v = e.union(jUnknown, e.eval(prm.val, false))
			}
			e.env[prm.name] = e.union(e.env[prm.name], v)
		}
	case "call":
		for _, prm := range st.params {
			if prm.val != nil {
				e.eval(prm.val, false)
			}
		}
	case "include", "import", "extends", "from":
		e.hit(scanners.SeverityHigh, "{% "+st.keyword+" %}",
			"it loads another template through the runtime's loader, which reads files on servers that configure one; a chat template is one self-contained string", st.off)
	}
}

func (e *templateEval) eval(n *jnode, called bool) jval {
	if n == nil {
		return jUnknown
	}
	switch n.kind {
	case jnConst:
		switch {
		case n.isStr:
			return jstr(n.str)
		case n.num != "":
			if v, err := strconv.ParseInt(strings.ReplaceAll(n.num, "_", ""), 0, 64); err == nil {
				return jval{num: v, isNum: true}
			}
		case n.name == "true":
			return jval{num: 1, isNum: true, isBool: true}
		case n.name == "false":
			return jval{num: 0, isNum: true, isBool: true}
		}
		return jUnknown
	case jnHole:
		if len(e.rs.hole) > 0 {
			return e.rs.hole[len(e.rs.hole)-1]
		}
		return jUnknown
	case jnName:
		if v, ok := e.env[n.name]; ok {
			return v
		}
		if jinjaGlobals[n.name] {
			return jval{glob: n.name, unknown: true}
		}
		return jval{unknown: true, ns: n.name}
	case jnGetattr:
		obj := e.eval(n.x, false)
		if n.x != nil && n.x.kind == jnName && pyModules[n.x.name] {
			if _, defined := e.env[n.x.name]; !defined {
				e.hit(scanners.SeverityCritical, "the name "+n.x.name+"."+n.name,
					"the template uses a Python module that only a runtime exposing it, or an escape, provides", n.off)
			}
		}
		e.attr(obj, jstr(n.name), "attribute", called, n.off)
		if n.x != nil && n.x.kind == jnName {
			if v, ok := e.env[n.x.name+"."+n.name]; ok {
				return v
			}
		}
		return jUnknown
	case jnGetitem:
		obj := e.eval(n.x, false)
		key := e.eval(n.args[0], false)
		if key.isNum && len(obj.strs) > 0 && obj.glob == "" {
			return e.mapStrs(obj, func(s string) string {
				rs := []rune(s)
				i := key.num
				if i < 0 {
					i += int64(len(rs))
				}
				if i < 0 || i >= int64(len(rs)) {
					return ""
				}
				return string(rs[i])
			})
		}
		if key.isNum && len(obj.items) > 0 && obj.subset {
			return e.elems(obj)
		}
		if key.isNum && len(obj.items) > 0 {
			if key.num >= 0 && key.num < int64(len(obj.items)) {
				return obj.items[key.num]
			}
			return jUnknown
		}
		e.attr(obj, key, "subscript", called, n.off)
		e.globalKey(obj, key, n.off)
		if obj.glob != "" {
			return jval{glob: obj.glob, unknown: true}
		}
		return jUnknown
	case jnSlice:
		obj := e.eval(n.x, false)
		if obj.glob != "" {
			e.hit(scanners.SeverityHigh, "a slice of the global "+obj.glob,
				"it takes characters out of how a Jinja global prints, which is how templates spell the Python internals they reach without writing them; no template reads them", n.off)
			return jval{glob: obj.glob, unknown: true}
		}
		var idx [3]*int64
		for i, a := range n.args {
			if a != nil {
				v := e.eval(a, false)
				if !v.isNum {
					return jUnknown
				}
				idx[i] = &v.num
			}
		}
		return e.mapStrs(obj, func(s string) string { return pySlice(s, idx) })
	case jnCall:
		return e.call(n, called)
	case jnFilter:
		return e.filter(n)
	case jnTest:
		e.eval(n.x, false)
		for _, a := range n.args {
			e.eval(a, false)
		}
		return jUnknown
	case jnBinary:
		a, b := e.eval(n.x, false), e.eval(n.y, false)
		v := e.binary(n, a, b)
		if g := cmp.Or(a.glob, b.glob); g != "" && (n.name == "~" || n.name == "+" || n.name == "*" || n.name == "%") {
			v.glob, v.unknown = g, true
		}
		return v
	case jnUnary:
		v := e.eval(n.x, false)
		if n.name == "-" && v.isNum {
			return jval{num: -v.num, isNum: true}
		}
		return jUnknown
	case jnCond:
		e.eval(n.args[0], false)
		return e.union(e.eval(n.x, false), e.eval(n.y, false))
	case jnList, jnTuple:
		out := jval{}
		for _, a := range n.args {
			out.items = e.addItems(out.items, e.eval(a, false))
		}
		return out
	case jnDict:
		out := jval{}
		for i := 0; i+1 < len(n.args); i += 2 {
			k := e.eval(n.args[i], false)
			e.eval(n.args[i+1], false)
			for _, ks := range k.strs {
				out.keys = e.addKey(out.keys, ks)
			}
		}
		return out
	}
	return jUnknown
}

// binary folds a binary operator's operands a and b.
func (e *templateEval) binary(n *jnode, a, b jval) jval {
	switch n.name {
	case "~":
		return e.cross(stringish(a), stringish(b), func(x, y string) string { return x + y })
	case "+":
		if a.isNum && b.isNum {
			return jval{num: a.num + b.num, isNum: true}
		}
		if len(a.items) > 0 || len(b.items) > 0 {
			return jval{items: e.addItems(e.addItems(nil, a.items...), b.items...)}
		}
		return e.cross(a, b, func(x, y string) string { return x + y })
	case "-":
		if a.isNum && b.isNum {
			return jval{num: a.num - b.num, isNum: true}
		}
	case "*":
		switch {
		case a.isNum && b.isNum:
			return jval{num: a.num * b.num, isNum: true}
		case len(a.strs) > 0 && b.isNum:
			return e.mapStrs(a, func(s string) string { return repeat(s, b.num) })
		case a.isNum && len(b.strs) > 0:
			return e.mapStrs(b, func(s string) string { return repeat(s, a.num) })
		}
	case "%":
		if a.isNum && b.isNum && b.num != 0 {
			return jval{num: a.num % b.num, isNum: true}
		}
		args := []jval{b}
		if len(b.items) > 0 {
			args = b.items
		}
		return e.mapStrs(a, func(s string) string {
			if r, ok := pyPercent(s, args); ok {
				return r
			}
			return ""
		})
	case "or":
		return e.union(a, b)
	}
	return jUnknown
}

// stringish is what ~ makes of a value: numbers become their text.
func stringish(v jval) jval {
	if v.isBool && len(v.strs) == 0 {
		return jstr(map[bool]string{true: "True", false: "False"}[v.num != 0])
	}
	if v.isNum && len(v.strs) == 0 {
		return jstr(strconv.FormatInt(v.num, 10))
	}
	return v
}

func repeat(s string, n int64) string {
	if n <= 0 {
		return ""
	}
	if int64(len(s))*n > jvalMaxLen {
		return strings.Repeat("x", jvalMaxLen+1)
	}
	return strings.Repeat(s, int(n))
}

func pySlice(s string, idx [3]*int64) string {
	rs := []rune(s)
	n := int64(len(rs))
	step := int64(1)
	if idx[2] != nil {
		step = *idx[2]
	}
	if step == 0 {
		return ""
	}
	norm := func(p *int64, def int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += n
		}
		lo, hi := int64(0), n
		if step < 0 {
			lo, hi = -1, n-1
		}
		return max(lo, min(v, hi))
	}
	var out []rune
	if step > 0 {
		for i := norm(idx[0], 0); i < norm(idx[1], n); i += step {
			out = append(out, rs[i])
		}
	} else {
		for i := norm(idx[0], n-1); i > norm(idx[1], -1); i += step {
			out = append(out, rs[i])
		}
	}
	return string(out)
}

func (e *templateEval) call(n *jnode, called bool) jval {
	args := make([]jval, len(n.args))
	for i, a := range n.args {
		args[i] = e.eval(a, false)
	}
	for _, k := range n.kwargs {
		e.eval(k.val, false)
	}
	fn := n.x
	if fn == nil {
		return jUnknown
	}
	switch fn.kind {
	case jnName:
		if prms, ok := e.macros[fn.name]; ok {
			for i, a := range args {
				if i < len(prms) {
					e.env[prms[i].name] = e.union(e.env[prms[i].name], a)
				}
			}
			for _, k := range n.kwargs {
				e.env[k.name] = e.union(e.env[k.name], e.eval(k.val, false))
			}
			return e.renderMacro(fn.name, prms, args, n.kwargs)
		}
		if _, shadowed := e.env[fn.name]; !shadowed {
			switch fn.name {
			case "getattr":
				// Not a Jinja global (Jinja2 raises UndefinedError), but
				// runtimes that hand Python's builtins to templates have
				// it; its key is an attribute walk like |attr.
				if len(args) >= 2 {
					e.attr(args[0], args[1], "getattr()", called, n.off)
					if !args[1].known() {
						e.hit(scanners.SeverityHigh, "getattr() with a computed name",
							"the attribute name is built at render time, which is how templates hide the Python internals they reach; no chat template needs it", n.off)
					}
				}
				return jUnknown
			case "dict":
				out := jval{}
				for _, k := range n.kwargs {
					out.keys = e.addKey(out.keys, k.name)
				}
				return out
			case "namespace":
				out := jval{unknown: true, attrs: map[string]jval{}}
				for _, k := range n.kwargs {
					out.attrs[k.name] = e.eval(k.val, false)
				}
				return out
			}
		}
		if pyModules[fn.name] || fn.name == "__import__" || fn.name == "eval" || fn.name == "exec" {
			if _, defined := e.env[fn.name]; !defined {
				e.hit(scanners.SeverityCritical, "a call to "+fn.name, "the template calls a Python builtin that only an escape or a runtime exposing it provides", n.off)
			}
		}
		e.eval(fn, true)
		return jUnknown
	case jnGetattr:
		obj := e.eval(fn.x, false)
		e.eval(fn, true)
		if obj.glob == "self" && fn.x.kind == jnName {
			return e.renderBlock(fn.name)
		}
		if obj.glob == "loop" && fn.name == "cycle" && fn.x.kind == jnName {
			return e.cycle(args)
		}
		if obj.glob != "" {
			return jval{glob: obj.glob, unknown: true}
		}
		if v, ok := e.method(fn.name, obj, args); ok {
			return v
		}
		switch fn.name {
		case "format", "format_map":
			for _, s := range obj.strs {
				for _, f := range formatFields(s) {
					if sev, why, bad := attrDanger(f, false); bad {
						e.hit(sev, "str.format field ."+f, why+"; str.format reaches it through a replacement field, which Jinja's sandbox did not check before 2.10.1/2.8.1 (CVE-2016-10745, CVE-2019-10906)", n.off)
					}
				}
			}
			return e.mapStrs(obj, func(s string) string {
				if r, ok := pyFormat(s, args); ok {
					return r
				}
				return ""
			})
		case "join":
			if len(args) > 0 {
				var out jval
				for _, sep := range obj.strs {
					out = e.union(out, e.joined(args[0], sep))
				}
				if len(obj.strs) == 0 {
					return jUnknown
				}
				return out
			}
		case "replace":
			if len(args) >= 2 && args[0].known() && args[1].known() {
				return e.mapStrs(obj, func(s string) string { return strings.ReplaceAll(s, args[0].strs[0], args[1].strs[0]) })
			}
		case "lower", "casefold":
			return e.mapStrs(obj, strings.ToLower)
		case "upper":
			return e.mapStrs(obj, strings.ToUpper)
		case "strip", "lstrip", "rstrip":
			cut := " \t\n\r\f\v"
			if len(args) > 0 && args[0].known() {
				cut = args[0].strs[0]
			}
			f := map[string]func(string, string) string{"strip": strings.Trim, "lstrip": strings.TrimLeft, "rstrip": strings.TrimRight}[fn.name]
			return e.mapStrs(obj, func(s string) string { return f(s, cut) })
		case "title", "capitalize", "swapcase":
			return jUnknown
		case "split":
			return jUnknown
		}
		return jUnknown
	default:
		e.eval(fn, true)
		return jUnknown
	}
}

// attrArgs are the filters whose attribute argument is an attribute path
// (dots walk further: Jinja's make_attrgetter).
var attrArgs = map[string]bool{
	"map": true, "selectattr": true, "rejectattr": true, "sort": true, "groupby": true, "sum": true,
	"unique": true, "min": true, "max": true,
}

func (e *templateEval) filter(n *jnode) jval {
	in := e.eval(n.x, false)
	args := make([]jval, len(n.args))
	for i, a := range n.args {
		args[i] = e.eval(a, false)
	}
	kws := map[string]jval{}
	for _, k := range n.kwargs {
		kws[k.name] = e.eval(k.val, false)
	}
	out := e.applyFilter(n.name, in, args, kws, n.off)
	if in.glob != "" && n.name != "attr" {
		// What a filter makes of a Jinja global (its text, its
		// characters) is still the global's: a key or slice of it is
		// checked as one.
		out.glob, out.unknown = in.glob, true
	}
	return out
}

// applyFilter applies the filter name to in, as Jinja2 does where the
// result can be known; off is where the filter is, for hits.
func (e *templateEval) applyFilter(name string, in jval, args []jval, kws map[string]jval, off int) jval {
	kw := func(k string) (jval, bool) {
		v, ok := kws[k]
		return v, ok
	}
	n := &jnode{name: name, off: off}
	if attrArgs[n.name] {
		var paths []jval
		if v, ok := kw("attribute"); ok {
			paths = append(paths, v)
		}
		if (n.name == "selectattr" || n.name == "rejectattr" || n.name == "groupby") && len(args) > 0 {
			paths = append(paths, args[0])
		}
		if n.name == "map" && len(args) >= 2 && args[0].known() && args[0].strs[0] == "attr" {
			e.attr(in, args[1], "|attr", false, n.off)
		}
		for _, pv := range paths {
			for _, path := range pv.strs {
				e.attr(in, jval{strs: strings.Split(path, ".")}, "|"+n.name+"(attribute)", false, n.off)
			}
			if !pv.known() && !(len(pv.strs) == 0 && pv.isNum) {
				e.hit(scanners.SeverityHigh, "|"+n.name+" with a computed attribute",
					"the attribute path is built at render time, which is how templates hide the Python internals they reach; no chat template needs it", n.off)
			}
		}
	}
	switch n.name {
	case "attr":
		if len(args) == 0 {
			return jUnknown
		}
		e.attr(in, args[0], "|attr", false, n.off)
		if !args[0].known() {
			e.hit(scanners.SeverityHigh, "|attr with a computed name",
				"the attribute name is built at render time, which is how templates hide the Python internals they reach; no chat template needs it", n.off)
		}
		return jUnknown
	case "join":
		sep := jstr("")
		if len(args) > 0 {
			sep = args[0]
		}
		if v, ok := kw("d"); ok {
			sep = v
		}
		if !sep.known() {
			return jUnknown
		}
		out := jval{}
		for _, s := range sep.strs {
			out = e.union(out, e.joined(in, s))
		}
		return out
	case "format":
		fargs := args
		return e.mapStrs(in, func(s string) string {
			if r, ok := pyPercent(s, fargs); ok {
				return r
			}
			return ""
		})
	case "replace":
		if len(args) >= 2 && args[0].known() && args[1].known() {
			return e.mapStrs(in, func(s string) string { return strings.ReplaceAll(s, args[0].strs[0], args[1].strs[0]) })
		}
		return jUnknown
	case "lower":
		return e.mapStrs(in, strings.ToLower)
	case "upper":
		return e.mapStrs(in, strings.ToUpper)
	case "trim":
		return e.mapStrs(in, strings.TrimSpace)
	case "reverse":
		if len(in.items) > 0 {
			r := jval{items: slices.Clone(in.items), subset: in.subset}
			slices.Reverse(r.items)
			return r
		}
		return e.mapStrs(in, func(s string) string {
			rs := []rune(s)
			slices.Reverse(rs)
			return string(rs)
		})
	case "string", "safe":
		if in.isNum && len(in.strs) == 0 {
			return stringish(in)
		}
		return in
	case "list":
		if len(in.keys) > 0 || len(in.items) > 0 {
			return in
		}
		if len(in.strs) == 1 { // a string: its characters
			out := jval{unknown: in.unknown}
			for _, r := range in.strs[0] {
				out.items = e.addItems(out.items, jstr(string(r)))
			}
			return out
		}
		return jUnknown
	case "first", "last":
		switch {
		case len(in.items) > 0 && in.subset:
			return e.elems(in)
		case len(in.items) > 0:
			if n.name == "first" {
				return in.items[0]
			}
			return in.items[len(in.items)-1]
		case len(in.keys) > 0:
			if n.name == "first" {
				return jstr(in.keys[0])
			}
			return jstr(in.keys[len(in.keys)-1])
		}
		return e.mapStrs(in, func(s string) string {
			rs := []rune(s)
			if len(rs) == 0 {
				return ""
			}
			if n.name == "first" {
				return string(rs[0])
			}
			return string(rs[len(rs)-1])
		})
	case "default", "d":
		if len(args) > 0 {
			return e.union(in, args[0])
		}
		return in
	}
	return e.foldFilter(name, in, args, kws)
}

// analyzeTemplate parses a chat template and returns the gadgets it holds,
// and the tags it could not parse (checked token by token instead).
func analyzeTemplate(src string) (hits []templateHit, unparsed int, firstErr string, limited bool) {
	tags, _ := lexTemplate(src)
	ps := make([]parsedTag, len(tags))
	for i, t := range tags {
		var err string
		if t.stmt {
			ps[i].st, err = parseStmt(t.toks)
		} else {
			ps[i].out, err = parseOutput(t.toks)
		}
		if err != "" {
			ps[i].fail = true
			unparsed++
			if firstErr == "" {
				firstErr = fmt.Sprintf("%s (byte %d)", err, t.off)
			}
		}
	}
	e := &templateEval{env: map[string]jval{}, macros: map[string][]jkwarg{}, seen: map[string]bool{}}
	e.tpl = buildTree(tags, ps)
	// Three passes: values assigned after their use (in a loop, a macro
	// called before it is defined) reach it on a later pass; only the
	// last pass reports.
	for pass := 0; pass < 3; pass++ {
		e.report = pass == 2
		for i, p := range ps {
			switch {
			case p.fail:
				e.tokens(tags[i].toks)
			case p.st != nil:
				e.stmtAt(i, p.st)
			case p.out != nil:
				e.eval(p.out, false)
			}
		}
	}
	return e.hits, unparsed, firstErr, e.over
}

// tokens checks a tag that could not be parsed: any name after a dot, and
// any string, that is a Python internal.
func (e *templateEval) tokens(toks []jtok) {
	for i, t := range toks {
		name := ""
		switch {
		case t.kind == jtName && i > 0 && toks[i-1].kind == jtOp && toks[i-1].val == ".":
			name = t.val
		case t.kind == jtString, t.kind == jtName && isDunder(t.val):
			name = t.val
		}
		if name == "" {
			continue
		}
		called := i+1 < len(toks) && toks[i+1].kind == jtOp && toks[i+1].val == "("
		if sev, why, bad := attrDanger(name, called); bad && (sev == scanners.SeverityCritical || t.kind == jtName) {
			e.hit(sev, "attribute "+name+" (in a tag mlwarden could not parse)", why, t.off)
		}
	}
}

// maxTemplateHits is how many gadgets of one template are reported.
const maxTemplateHits = 8

// chatTemplate checks one chat template and reports what it finds under
// rule r, at where (e.g. "GGUF key tokenizer.chat_template"). A Modelfile
// TEMPLATE is rendered by Ollama with Go's text/template, where these
// walks fail, so its findings are high, not critical: the template is
// dangerous where it is copied into a Jinja runtime.
func (sc *scan) chatTemplate(p place, r scanners.Rule, where, src string, kind templateKind) {
	modelfile := kind == tmplModelfile
	hits, unparsed, firstErr, limited := analyzeTemplate(src)
	if limited {
		sc.limit("template evaluation limit", p, fmt.Sprintf("Chat template in %s%s folds more than %d MiB of strings: the strings built past that were not followed to the attributes they may name.", where, p.in(), templateMaxWork>>20))
	}
	if modelfile {
		// A Go template's actions ({{ range .Messages }}, {{ .System }})
		// read oddly as Jinja: keep only what names Python internals.
		hits = slices.DeleteFunc(hits, func(h templateHit) bool { return h.sev < scanners.SeverityCritical })
	}
	for i, h := range hits {
		if i == maxTemplateHits {
			sc.add(r, hits[i].sev, fmt.Sprintf("Chat template in %s%s: %d more gadgets, not listed one by one. %s", where, p.in(), len(hits)-i, r.Fix), fmt.Sprintf("%d more", len(hits)-i))
			break
		}
		sev, note := h.sev, ""
		if modelfile && sev > scanners.SeverityHigh {
			sev, note = scanners.SeverityHigh, " Ollama renders a Modelfile TEMPLATE as a Go template, where this fails; it is dangerous where the template is copied into a Jinja runtime."
		}
		line := strings.Count(src[:min(h.off, len(src))], "\n") + 1
		sc.add(r, sev,
			fmt.Sprintf("Chat template in %s%s uses %s at line %d (byte %d): %s. Runtimes render chat templates with Jinja2; without a sandbox (llama-cpp-python before 0.2.72, CVE-2024-34359, and other servers) this reaches Python and runs code when the model is served.%s Tag: %s. %s",
				where, p.in(), h.what, line, h.off, h.why, note, snippet(src, h.off), r.Fix),
			fmt.Sprintf("%s uses %s at line %d", where, h.what, line))
	}
	if unparsed > 0 && kind == tmplChat { // a Modelfile TEMPLATE is a Go template: Jinja cannot parse it
		sc.add(r, scanners.SeverityLow,
			fmt.Sprintf("Chat template in %s%s has %d tags mlwarden's Jinja reader could not parse (first: %s); they were checked token by token for Python internals. Jinja2 refuses a template it cannot compile.", where, p.in(), unparsed, firstErr),
			fmt.Sprintf("%s: %d unparsed tags", where, unparsed))
	}
}

// snippet quotes the template around off, at most 120 bytes.
func snippet(src string, off int) string {
	start := max(0, off-40)
	if k := strings.LastIndex(src[start:min(off, len(src))], "{"); k >= 0 {
		start += k
	}
	end := min(len(src), start+120)
	s := strings.ToValidUTF8(src[start:end], "?")
	return strconv.Quote(s)
}

// maxTemplateFile is the most bytes of a tokenizer_config.json, .jinja file
// or Modelfile read (real ones are kilobytes; tokenizer configs with their
// added tokens a few megabytes).
const maxTemplateFile = 64 << 20

// readText reads a template file whole, up to maxTemplateFile (past it: a
// limit, and the head is checked).
func (sc *scan) readText(p place, ra io.ReaderAt, size int64, what string) []byte {
	n := size
	if n > maxTemplateFile {
		n = maxTemplateFile
		sc.limit("template size limit", p, fmt.Sprintf("%s%s is larger than %d MiB: only its first %d MiB were checked.", what, p.in(), maxTemplateFile>>20, maxTemplateFile>>20))
	}
	b := make([]byte, n)
	k, _ := ra.ReadAt(b, 0)
	return b[:k]
}

// templateKind is where a template was found: a chat template proper,
// an Ollama Modelfile TEMPLATE, or another string value of a config that
// holds Jinja tags (analysed the same, without the note on tags that do
// not parse: it may be text that merely has braces).
type templateKind uint8

const (
	tmplChat templateKind = iota
	tmplModelfile
	tmplValue
)

// hasJinjaTag reports whether s holds a {{ }} or {% %} opening.
func hasJinjaTag(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%")
}

// maxConfigTemplates is how many templates of one config file are
// analysed (past it: a limit).
const maxConfigTemplates = 4096

// configTemplates checks the templates of one config file: every string
// under a chat_template key, and every other string value that holds a
// Jinja tag (default_chat_template, lists of named templates under other
// keys, prompt templates in nested objects: runtimes and wrappers read
// them as chat templates too).
type configTemplates struct {
	sc   *scan
	p    place
	file string
	n    int
}

func (c *configTemplates) check(where, s string, chat bool) {
	if !chat && !hasJinjaTag(s) {
		return
	}
	if c.n++; c.n > maxConfigTemplates {
		if c.n == maxConfigTemplates+1 {
			c.sc.limit("template count limit", c.p, fmt.Sprintf("%s%s holds more than %d templates: the rest were not checked.", c.file, c.p.in(), maxConfigTemplates))
		}
		return
	}
	kind := tmplValue
	if chat {
		kind = tmplChat
	}
	c.sc.chatTemplate(c.p, ruleChatTemplate, c.file+" "+where, s, kind)
}

// walkJSON checks every string of a decoded JSON value; at is its path
// (chat_template, chat_templates[1] "tool_use", processor.templates.rag).
func (c *configTemplates) walkJSON(v any, at string, chat bool) {
	switch x := v.(type) {
	case string:
		c.check(at, x, chat)
	case []any:
		for i, e := range x {
			if m, ok := e.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					if t, ok := m["template"].(string); ok { // a named template
						c.check(fmt.Sprintf("%s %q", at, n), t, chat || hasJinjaTag(t))
						continue
					}
				}
			}
			c.walkJSON(e, fmt.Sprintf("%s[%d]", at, i), chat)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub := k
			if at != "" {
				sub = at + "." + k
			}
			c.walkJSON(x[k], sub, chat || k == "chat_template")
		}
	}
}

// chatJSON checks the chat templates of a tokenizer_config.json,
// chat_template.json or other JSON config: "chat_template" is a string, or
// a list of {"name", "template"} (transformers' named templates), and any
// other string value with a Jinja tag is checked too. Python's json reads
// NaN and Infinity, which pyJSON turns into null; a file that still does
// not decode has every string literal with a Jinja tag checked instead.
func (sc *scan) chatJSON(p place, ra io.ReaderAt, size int64, name string) {
	data := sc.readText(p, ra, size, path.Base(name))
	c := &configTemplates{sc: sc, p: p, file: path.Base(name)}
	var doc any
	if err := json.Unmarshal(pyJSON(data), &doc); err != nil {
		for _, m := range reJSONString.FindAllIndex(data, -1) {
			var s string
			if json.Unmarshal(data[m[0]:m[1]], &s) == nil {
				c.check(fmt.Sprintf("(string at byte %d)", m[0]), s, false)
			}
		}
		return
	}
	c.walkJSON(doc, "", false)
}

// chatYAML checks the templates of a YAML config (a serving stack's model
// config): every string under a chat_template key, at any depth, and every
// other string with a Jinja tag. A file YAML cannot read has its
// chat_template lines checked as text.
func (sc *scan) chatYAML(p place, ra io.ReaderAt, size int64, name string) {
	data := sc.readText(p, ra, size, path.Base(name))
	file := path.Base(name)
	c := &configTemplates{sc: sc, p: p, file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		for _, m := range reYAMLTemplateLine.FindAllSubmatch(data, -1) {
			c.check("chat_template", string(m[1]), true)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !reYAMLTemplateLine.MatchString(line) {
				c.check(fmt.Sprintf("(line %d)", i+1), line, false)
			}
		}
		return
	}
	var walk func(n *yaml.Node, chat bool, depth int)
	walk = func(n *yaml.Node, chat bool, depth int) {
		if n == nil || depth > 10000 {
			return
		}
		switch n.Kind {
		case yaml.ScalarNode:
			if chat || n.Tag == "!!str" || n.Tag == "" {
				where := fmt.Sprintf("(line %d)", n.Line)
				if chat {
					where = "chat_template " + where
				}
				c.check(where, n.Value, chat)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], chat || n.Content[i].Value == "chat_template", depth+1)
			}
		default:
			for _, k := range n.Content {
				walk(k, chat, depth+1)
			}
		}
	}
	walk(&doc, false, 0)
}

var reYAMLTemplateLine = lazyregexp.New(`(?m)^\s*chat_template\s*:\s*(.+)$`)

// reJSONString finds the string literals of JSON text, with their escapes.
var reJSONString = lazyregexp.New(`"(?:[^"\\]|\\.)*"`)

// jinjaFile checks a standalone chat template (transformers'
// chat_template.jinja, additional_chat_templates/*.jinja).
func (sc *scan) jinjaFile(p place, ra io.ReaderAt, size int64, name string) {
	sc.chatTemplate(p, ruleChatTemplate, path.Base(name), string(sc.readText(p, ra, size, path.Base(name))), tmplChat)
}

// modelfile checks the TEMPLATE of an Ollama Modelfile: TEMPLATE followed by
// a """triple-quoted""" (multi-line) or "quoted" value or the rest of the
// line; commands are case-insensitive.
func (sc *scan) modelfile(p place, ra io.ReaderAt, size int64, name string) {
	text := string(sc.readText(p, ra, size, path.Base(name)))
	for _, loc := range reTemplateCmd.FindAllStringIndex(text, 64) {
		rest := text[loc[1]:]
		var v string
		switch {
		case strings.HasPrefix(rest, `"""`):
			end := strings.Index(rest[3:], `"""`)
			if end < 0 {
				end = len(rest) - 3
			}
			v = rest[3 : 3+end]
		case strings.HasPrefix(rest, `"`):
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			v = rest[1 : 1+end]
		default:
			v, _, _ = strings.Cut(rest, "\n")
		}
		line := strings.Count(text[:loc[0]], "\n") + 1
		sc.chatTemplate(p, ruleChatTemplate, fmt.Sprintf("%s TEMPLATE (line %d)", path.Base(name), line), v, tmplModelfile)
	}
}

var reTemplateCmd = lazyregexp.New(`(?im)^[ \t]*TEMPLATE[ \t]+`)
