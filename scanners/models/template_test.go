package models

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestTemplateBenign: the chat templates of common model families (Llama 3.1
// with tools, ChatML, Mistral, Gemma, Qwen 2.5 and 3, DeepSeek-R1, a Phi-3
// template with {% generation %} and the Jinja globals used as intended)
// parse whole and hold no gadget.
func TestTemplateBenign(t *testing.T) {
	files, _ := filepath.Glob("testdata/templates/*.jinja")
	if len(files) < 8 {
		t.Fatalf("templates missing: %v", files)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hits, unparsed, first, _ := analyzeTemplate(string(src))
		if unparsed > 0 {
			t.Errorf("%s: %d tags not parsed, first: %s", f, unparsed, first)
		}
		for _, h := range hits {
			t.Errorf("%s: %s %s at %d", f, h.sev, h.what, h.off)
		}
	}
}

// TestTemplateGadgets: server-side template injection gadgets, each spelled
// the ways attackers spell them, are found at their severity.
func TestTemplateGadgets(t *testing.T) {
	crit, high := scanners.SeverityCritical, scanners.SeverityHigh
	cases := []struct {
		name, src string
		sev       scanners.Severity
		what      string // in the hit
	}{
		{"self globals", `{{ self.__init__.__globals__.__builtins__.__import__('os').popen('true').read() }}`, crit, "__globals__"},
		{"cycler", `{{ cycler.__init__.__globals__.os.popen('true').read() }}`, crit, "__init__"},
		{"joiner subscripts", `{{ joiner.__init__.__globals__['__builtins__']['__import__']('os').system('true') }}`, crit, "__builtins__"},
		{"namespace", `{{ namespace.__init__.__globals__.os.popen('true') }}`, crit, "__globals__"},
		{"lipsum", `{{ lipsum.__globals__['os'].popen('true').read() }}`, crit, "__globals__"},
		{"range", `{{ range.__init__.__globals__ }}`, crit, "__init__"},
		{"mro subclasses", `{{ ''.__class__.__mro__[1].__subclasses__() }}`, crit, "__subclasses__"},
		{"base subclasses", `{{ ''.__class__.__base__.__subclasses__() }}`, crit, "__base__"},
		{"catch_warnings loop", `{% for c in [].__class__.__base__.__subclasses__() %}{% if c.__name__ == 'catch_warnings' %}{{ c()._module.__builtins__['__import__']('os').popen('true').read() }}{% endif %}{% endfor %}`, crit, "__subclasses__"},
		{"attr concat", `{{ lipsum|attr('__glo' ~ 'bals__') }}`, crit, "|attr __globals__"},
		{"attr hex escapes", `{{ ()|attr('\x5f\x5fclass\x5f\x5f') }}`, crit, "__class__"},
		{"attr unicode escapes", `{{ ()|attr("\u005f\u005fclass\U0000005f\N{LOW LINE}") }}`, crit, "__class__"},
		{"attr octal escapes", `{{ ()|attr('\137\137class\137\137') }}`, crit, "__class__"},
		{"attr format filter", `{{ ()|attr("%c%cclass%c%c"|format(95,95,95,95)) }}`, crit, "__class__"},
		{"attr join list", `{{ ()|attr(['__cla','ss__']|join) }}`, crit, "__class__"},
		{"attr dict keys", `{{ ()|attr(dict(__cl=1,ass__=2)|join) }}`, crit, "__class__"},
		{"attr reverse", `{{ ()|attr('__ssalc__'|reverse) }}`, crit, "__class__"},
		{"attr slice", `{{ ()|attr('__ssalc__'[::-1]) }}`, crit, "__class__"},
		{"attr set vars", `{% set a = '__cla' %}{% set b = 'ss__' %}{{ ()|attr(a ~ b) }}`, crit, "__class__"},
		{"attr later set", `{% for i in range(2) %}{{ ()|attr(x) }}{% set x = '__class__' %}{% endfor %}`, crit, "__class__"},
		{"namespace attr", `{% set ns = namespace(x='__globals__') %}{{ lipsum|attr(ns.x) }}`, crit, "__globals__"},
		{"namespace set attr", `{% set ns = namespace() %}{% set ns.y = '__glo' %}{% set ns.y = ns.y ~ 'bals__' %}{{ lipsum|attr(ns.y) }}`, crit, "__globals__"},
		{"macro param", `{% macro m(a) %}{{ ()|attr(a) }}{% endmacro %}{{ m('__class__') }}`, crit, "__class__"},
		{"macro default", `{% macro m(a='__class__') %}{{ ()[a] }}{% endmacro %}{{ m() }}`, crit, "__class__"},
		{"loop var", `{% for n in ['__cla' ~ 'ss__'] %}{{ ()|attr(n) }}{% endfor %}`, crit, "__class__"},
		{"replace", `{{ ()|attr('_-_class_-_'|replace('-','_')) }}`, crit, "__class__"},
		{"lower", `{{ ()|attr('__CLASS__'|lower) }}`, crit, "__class__"},
		{"repeat", `{{ ()|attr('_'*2 ~ 'class' ~ '_'*2) }}`, crit, "__class__"},
		{"percent", `{{ ()|attr('%s%s' % ('__cla', 'ss__')) }}`, crit, "__class__"},
		{"percent c", `{{ ()|attr('%c%c' % (95, 95) ~ 'class__') }}`, crit, "__class__"},
		{"str format fold", `{{ ()|attr('{}{}'.format('__cla','ss__')) }}`, crit, "__class__"},
		{"str join", `{{ ()|attr(''.join(['__cla','ss__'])) }}`, crit, "__class__"},
		{"subscript concat", `{{ ()['__cla' ~ 'ss__'] }}`, crit, "subscript __class__"},
		{"map attribute", `{{ messages|map(attribute='__class__')|list }}`, crit, "__class__"},
		{"map attr filter", `{{ messages|map('attr', '__class__')|list }}`, crit, "__class__"},
		{"selectattr dotted", `{{ messages|selectattr('content.__class__')|list }}`, crit, "__class__"},
		{"format fields", `{{ '{0.__class__.__init__.__globals__}'.format(messages) }}`, crit, "str.format field"},
		{"attr format", `{{ messages|attr('format') }}`, crit, "format"},
		{"os popen", `{{ os.popen('true').read() }}`, crit, "os.popen"},
		{"import call", `{{ __import__('os') }}`, crit, "__import__"},
		{"private attr", `{{ messages._x }}`, high, "_x"},
		{"template reference", `{{ self._TemplateReference__context }}`, crit, "_TemplateReference__context"},
		{"global attribute", `{{ cycler.reset }}`, high, "of the global cycler"},
		{"dynamic attr", `{{ messages|attr(messages[0].content) }}`, high, "computed"},
		{"include", `{% include '/etc/passwd' %}`, high, "include"},
		{"import", `{% import 'os' as os %}`, high, "import"},
		{"unparsed tag", `{{ lipsum.__globals__ @@ ) }}`, crit, "could not parse"},
		{"in filter block", `{% filter attr('__class__') %}x{% endfilter %}`, crit, "__class__"},
		{"in set block", `{% set x | attr('__class__') %}y{% endset %}`, crit, "__class__"},
		{"in test argument", `{% if x is sameas(lipsum.__globals__) %}{% endif %}`, crit, "__globals__"},
		{"in conditional", `{{ 1 if x else lipsum.__globals__ }}`, crit, "__globals__"},
		{"in dict literal", `{{ {'a': {'b': lipsum.__globals__}} }}`, crit, "__globals__"},
		{"in call kwargs", `{{ raise_exception(msg=lipsum.__globals__) }}`, crit, "__globals__"},
		{"with block", `{% with a = '__globals__' %}{{ lipsum|attr(a) }}{% endwith %}`, crit, "__globals__"},
		{"whitespace control", "{%- set a = '__glo' -%}{%+ set b = a ~ 'bals__' +%}{{- lipsum|attr(b) -}}", crit, "__globals__"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits, _, _, _ := analyzeTemplate(c.src)
			found := false
			for _, h := range hits {
				if strings.Contains(h.what, c.what) && h.sev >= c.sev {
					found = true
				}
			}
			if !found {
				t.Errorf("want %s %q, got %+v", c.sev, c.what, hits)
			}
		})
	}
}

// TestTemplateNotGadgets: text that merely mentions internals, in data,
// comments, raw blocks and strings that reach no attribute, is quiet.
func TestTemplateNotGadgets(t *testing.T) {
	for _, src := range []string{
		`__globals__ in the text {{ message.content }}`,
		`{# {{ lipsum.__globals__ }} #}{{ x }}`,
		`{% raw %}{{ ''.__class__ }}{% endraw %}`,
		`{{ 'the __class__ attribute' }}{{ message['content'] }}`,
		`{% set k = '__class__' %}{{ k }}`,
		`{{ messages|selectattr('role', 'equalto', 'system')|list }}`,
		`{{ '}}' }}{{ x }}`,
		`{{ {'a': {'b': 1}} }}`,
		`{% set ns = namespace(found=false) %}{% set ns.found = true %}{{ ns.found }}`,
		`{{ self.header() }}`,
		`{{ messages[0]['content'].split(':')[-1].strip() }}`,
	} {
		hits, unparsed, first, _ := analyzeTemplate(src)
		if len(hits) > 0 || unparsed > 0 {
			t.Errorf("%q: %+v, %d unparsed (%s)", src, hits, unparsed, first)
		}
	}
}

func TestPyUnescape(t *testing.T) {
	cases := map[string]string{
		`\x5f\x5f`: "__", `\u005f`: "_", `\U0000005f`: "_", `\N{LOW LINE}`: "_", `\137`: "_",
		`a\nb`: "a\nb", `\\`: `\`, `\'`: "'", `\q`: `\q`, `\x5`: `\x5`,
	}
	for in, want := range cases {
		if got := pyUnescape(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestChatTemplateFiles: the files that hold chat templates are recognised
// by name and content and their templates checked; benign ones are quiet.
func TestChatTemplateFiles(t *testing.T) {
	evil := `{{ cycler.__init__.__globals__.os.popen('true').read() }}`
	evilJSON := strings.ReplaceAll(evil, `'`, `\u0027`)
	good, _ := os.ReadFile("testdata/templates/chatml.jinja")
	goodJSON := strings.ReplaceAll(strings.ReplaceAll(string(good), `\`, `\\`), "\n", `\n`)
	cases := []struct {
		path, data string
		want       scanners.Severity // the highest finding; 0: none
	}{
		{"tokenizer_config.json", `{"bos_token": "<s>", "chat_template": "` + evilJSON + `"}`, scanners.SeverityCritical},
		{"repo/tokenizer_config.json", `{"chat_template": [{"name": "default", "template": "{{ x }}"}, {"name": "tool_use", "template": "` + evilJSON + `"}]}`, scanners.SeverityCritical},
		{"tokenizer_config.json", `{"x": NaN, "chat_template": "` + evilJSON + `"}`, scanners.SeverityCritical},
		{"tokenizer_config.json", `{"bos_token": "<s>", "chat_template": "` + goodJSON + `"}`, 0},
		{"tokenizer_config.json", `{"bos_token": "<s>"}`, 0},
		{"chat_template.json", `{"chat_template": "` + evilJSON + `"}`, scanners.SeverityCritical},
		{"chat_template.jinja", evil, scanners.SeverityCritical},
		{"additional_chat_templates/tool_use.jinja", string(good), 0},
		{"Modelfile", "FROM ./model.gguf\nTEMPLATE \"\"\"" + evil + "\n\"\"\"\nPARAMETER stop <|im_end|>\n", scanners.SeverityHigh},
		{"Modelfile", "FROM llama3\ntemplate \"{{ .System }} {{ .Prompt }}\"\n", 0},
		{"Modelfile", "FROM llama3\nTEMPLATE {{ if .System }}<|system|>{{ .System }}{{ end }}\n", 0},
	}
	for _, c := range cases {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: c.path, Size: int64(len(c.data))}
		if !New().Wants(a, []byte(c.data)) {
			t.Errorf("%s: not wanted", c.path)
			continue
		}
		fs, err := scanners.ScanBytes(context.Background(), New(), a, []byte(c.data))
		if err != nil {
			t.Fatal(err)
		}
		var top scanners.Severity
		for _, f := range fs {
			top = max(top, f.Severity)
			if c.want >= scanners.SeverityHigh && f.RuleID != "models/chat-template-injection" {
				t.Errorf("%s: rule %s", c.path, f.RuleID)
			}
		}
		if top != c.want {
			t.Errorf("%s %.60q: top severity %v, want %v: %+v", c.path, c.data, top, c.want, fs)
		}
	}
	// Any JSON object whose head names chat_template is read (configs
	// saved under other names); one that does not is not.
	if !New().Wants(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: "config.json"}, []byte(`{"chat_template": "x"}`)) {
		t.Errorf("config.json with a chat_template not wanted")
	}
	if New().Wants(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: "config.json"}, []byte(`{"hidden_size": 768}`)) {
		t.Errorf("config.json without a chat_template wanted")
	}
}
