package hostile

// Issue 37, models (chat templates, tokenizer configs, Keras configs, ONNX
// external data). One block of its own: other engineers append theirs to
// hostile.go.

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A templateTrick spells name at render time without a string literal that
// holds it: pre is what the template says first (a {% set %} block, a
// macro), expr the expression that then gives name. v is a variable name
// free for the trick to use.
type templateTrick func(v, name string) (pre, expr string)

// halves splits name so that neither half is a Python internal: "__glo",
// "bals__".
func halves(name string) (string, string) {
	h := (len(name) + 1) / 2
	return name[:h], name[h:]
}

// lipsumText is how Jinja2 prints its lipsum global: "<function
// generate_lorem_ipsum at 0x…>"; the characters before the address.
const lipsumText = "<function generate_lorem_ipsum at "

var templateTricks = map[string]templateTrick{
	// {% set v %}…{% endset %}: the body is rendered into v.
	"block set": func(v, name string) (string, string) {
		a, b := halves(name)
		return fmt.Sprintf("{%% set %s %%}%s{{ %q }}{%% endset %%}", v, a, b), v
	},
	// A set block through a filter, the body spelled with dashes.
	"block set filtered": func(v, name string) (string, string) {
		return fmt.Sprintf("{%% set %s | replace('-', '_') %%}%s{%% endset %%}", v, strings.ReplaceAll(name, "_", "-")), v
	},
	// {% filter %} inside a set block.
	"filter block": func(v, name string) (string, string) {
		return fmt.Sprintf("{%% set %s %%}{%% filter replace('-', '_') %%}%s{%% endfilter %%}{%% endset %%}", v, strings.ReplaceAll(name, "_", "-")), v
	},
	// A for loop inside a set block joins the halves.
	"for in block set": func(v, name string) (string, string) {
		a, b := halves(name)
		return fmt.Sprintf("{%% set %s %%}{%% for c in [%q, %q] %%}{{ c }}{%% endfor %%}{%% endset %%}", v, a, b), v
	},
	// loop.cycle gives back one of its arguments.
	"loop.cycle": func(v, name string) (string, string) {
		a, b := halves(name)
		return "", fmt.Sprintf("loop.cycle(%q ~ %q)", a, b)
	},
	"batch": func(v, name string) (string, string) {
		a, b := halves(name)
		return "", fmt.Sprintf("([%q, %q]|batch(2)|first|join)", a, b)
	},
	"slice filter": func(v, name string) (string, string) {
		a, b := halves(name)
		return "", fmt.Sprintf("([%q, %q]|slice(1)|first|join)", a, b)
	},
	// tojson quotes the string; the slice takes the quotes off.
	"tojson": func(v, name string) (string, string) {
		a, b := halves(name)
		return "", fmt.Sprintf("((%q ~ %q)|tojson)[1:-1]", a, b)
	},
	// wordwrap with an empty wrap string joins the lines it breaks.
	"wordwrap": func(v, name string) (string, string) {
		a, b := halves(name)
		return "", fmt.Sprintf("(%q|wordwrap(%d, wrapstring=''))", a+" "+b, len(a))
	},
	"center": func(v, name string) (string, string) {
		a, b := halves(name)
		return "", fmt.Sprintf("((%q ~ %q)|center(%d)|trim)", a, b, len(name)+4)
	},
	// striptags removes tags and decodes entities.
	"striptags": func(v, name string) (string, string) {
		a, b := halves(name)
		return "", fmt.Sprintf("(%q|striptags)", strings.ReplaceAll(a+"<i></i>"+b, "_", "&#95;"))
	},
	"truncate": func(v, name string) (string, string) {
		a, b := halves(name)
		return "", fmt.Sprintf("((%q ~ %q ~ 'xyzzy')|truncate(%d, true, '', 0))", a, b, len(name))
	},
	// self.<block>() renders a block.
	"self block": func(v, name string) (string, string) {
		a, b := halves(name)
		return fmt.Sprintf("{%% block %s %%}%s{{ %q }}{%% endblock %%}", v, a, b), "self." + v + "()"
	},
	// A macro's call is its rendered body.
	"macro body": func(v, name string) (string, string) {
		a, b := halves(name)
		return fmt.Sprintf("{%% macro %s() %%}%s{{ %q }}{%% endmacro %%}", v, a, b), v + "()"
	},
	// Characters sliced out of how a Jinja global prints: the evaluator
	// cannot know them.
	"global text slices": func(v, name string) (string, string) {
		var parts []string
		for _, c := range name {
			if i := strings.IndexRune(lipsumText, c); i >= 0 {
				parts = append(parts, fmt.Sprintf("(lipsum|string)[%d:%d]", i, i+1))
			} else {
				parts = append(parts, fmt.Sprintf("%q", string(c)))
			}
		}
		return "", "(" + strings.Join(parts, " ~ ") + ")"
	},
}

// TemplateTricks lists the names of ChatTemplateEscape's tricks.
func TemplateTricks() []string {
	out := make([]string, 0, len(templateTricks))
	for k := range templateTricks {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ChatTemplateEscape returns a chat template that renders
// lipsum.__globals__.os.popen('true').read() (inside a for loop) in Jinja2
// without a sandbox,
// every attribute name spelled by the trick named (see TemplateTricks), so
// that no string literal holds one. It is "" for an unknown trick.
func ChatTemplateEscape(trick string) string {
	t := templateTricks[trick]
	if t == nil {
		return ""
	}
	var pre, chain strings.Builder
	chain.WriteString("lipsum")
	for i, name := range []string{"__globals__", "os", "popen", "read"} {
		p, e := t(fmt.Sprintf("k%d", i), name)
		pre.WriteString(p)
		chain.WriteString("[" + e + "]")
		if name == "popen" {
			chain.WriteString("('true')")
		}
	}
	return "{% for message in messages %}{{ message['content'] }}{% endfor %}" + pre.String() +
		"{% for i in [0] %}{{ " + chain.String() + "() }}{% endfor %}"
}

// TemplateDoubling is a chat template of a few hundred bytes whose
// set-to-itself statements double what a naive evaluator keeps of one
// value n times: a dict's keys (via "dict"), a namespace's attribute (via
// "namespace") or a list's items (via "list", x + x).
func TemplateDoubling(via string, n int) string {
	var b strings.Builder
	switch via {
	case "namespace":
		b.WriteString("{% set ns = namespace(x=dict(a=1, b=2)) %}")
		for range n {
			b.WriteString("{% set ns.x = ns.x %}")
		}
		b.WriteString("{{ ns.x|join }}")
	case "list":
		b.WriteString("{% set x = ['a', 'b'] %}")
		for range n {
			b.WriteString("{% set x = x + x %}")
		}
		b.WriteString("{{ x|join }}")
	default:
		b.WriteString("{% set x = dict(a=1, b=2) %}")
		for range n {
			b.WriteString("{% set x = x %}")
		}
		b.WriteString("{{ x|join }}")
	}
	return b.String()
}

// TokenizerConfig is a tokenizer_config.json whose templates are under the
// keys transformers and other runtimes read: template is placed as the
// shape named — "chat_template" (the key itself), "named" (a list of
// {"name", "template"} under "chat_templates"), "nested" (inside an
// object), anything else under "default_chat_template"; a benign
// chat_template is there too.
func TokenizerConfig(shape, template string) []byte {
	doc := map[string]any{"bos_token": "<s>", "eos_token": "</s>", "tokenizer_class": "LlamaTokenizer",
		"chat_template": "{% for message in messages %}{{ message['content'] }}{% endfor %}"}
	switch shape {
	case "chat_template":
		doc["chat_template"] = template
	case "named":
		doc["chat_templates"] = []any{map[string]any{"name": "default", "template": "{{ messages[0]['content'] }}"},
			map[string]any{"name": "tool_use", "template": template}}
	case "nested":
		doc["processor"] = map[string]any{"templates": map[string]any{"rag": template}}
	default:
		doc["default_chat_template"] = template
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return b
}

// GGUFTemplate is a GGUF v3 file with general.architecture and one string
// key/value (a chat template under key) and no tensors.
func GGUFTemplate(key, template string) []byte {
	var b bytes.Buffer
	u32 := func(v uint32) { binary.Write(&b, binary.LittleEndian, v) }
	u64 := func(v uint64) { binary.Write(&b, binary.LittleEndian, v) }
	str := func(s string) { u64(uint64(len(s))); b.WriteString(s) }
	b.WriteString("GGUF")
	u32(3)
	u64(0) // tensors
	u64(2) // key/values
	str("general.architecture")
	u32(8)
	str("llama")
	str(key)
	u32(8)
	str(template)
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	return b.Bytes()
}

// KerasArchive is a .keras file (a zip of config.json and metadata.json)
// holding config, written by Keras version.
func KerasArchive(config any, version string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("metadata.json")
	md, _ := json.Marshal(map[string]string{"keras_version": version, "date_saved": "2026-12-03@00:00:00"})
	w.Write(md)
	w, _ = zw.Create("config.json")
	cfg, _ := json.Marshal(config)
	w.Write(cfg)
	w, _ = zw.Create("model.weights.h5")
	w.Write([]byte{})
	zw.Close()
	return b.Bytes()
}

// KerasSequential is a Keras 3 Sequential model config whose layers are
// layers, each nested depth models deep (a Sequential inside a layer
// wrapper inside …).
func KerasSequential(depth int, layers ...map[string]any) map[string]any {
	ls := make([]any, 0, len(layers)+1)
	ls = append(ls, map[string]any{"module": "keras.layers", "class_name": "InputLayer", "config": map[string]any{"name": "in", "batch_shape": []any{nil, 4}}})
	for _, l := range layers {
		ls = append(ls, l)
	}
	model := map[string]any{"module": "keras", "class_name": "Sequential", "config": map[string]any{"name": "seq", "layers": ls}, "registered_name": nil}
	for i := range depth {
		model = map[string]any{"module": "keras.layers", "class_name": "TimeDistributed",
			"config": map[string]any{"name": fmt.Sprintf("wrap%d", i), "layer": model}}
		model = map[string]any{"module": "keras", "class_name": "Sequential", "config": map[string]any{"name": fmt.Sprintf("outer%d", i), "layers": []any{model}}}
	}
	return model
}

// ONNXExternal is an ONNX model (a ModelProto) with one initializer whose
// data is external, at location.
func ONNXExternal(location string) []byte {
	field := func(num int, wire byte, payload []byte) []byte {
		out := binary.AppendUvarint(nil, uint64(num)<<3|uint64(wire))
		if wire == 2 {
			out = binary.AppendUvarint(out, uint64(len(payload)))
		}
		return append(out, payload...)
	}
	str := func(num int, s string) []byte { return field(num, 2, []byte(s)) }
	varint := func(num int, v uint64) []byte { return field(num, 0, binary.AppendUvarint(nil, v)) }
	entry := append(str(1, "location"), str(2, location)...)
	tensor := slices.Concat(varint(1, 4), varint(2, 1), str(8, "w"), field(13, 2, entry), varint(14, 1))
	graph := slices.Concat(str(2, "g"), field(5, 2, tensor))
	return slices.Concat(varint(1, 8), str(2, "mlwarden-hostile"), field(7, 2, graph), field(8, 2, slices.Concat(str(1, ""), varint(2, 17))))
}
