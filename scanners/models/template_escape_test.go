package models

import (
	"context"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
	"github.com/mlwarden/mlwarden/scanners"
)

// topHit returns the most severe hit whose gadget mentions what.
func topHit(hits []templateHit, what string) scanners.Severity {
	var top scanners.Severity
	for _, h := range hits {
		if strings.Contains(h.what, what) {
			top = max(top, h.sev)
		}
	}
	return top
}

// TestTemplateEscapeTricks: templates that reach lipsum.__globals__ and
// run os.popen('true') with every attribute name spelled at render time
// (block sets, {% filter %}, loops inside blocks, loop.cycle, the filters
// that rebuild text, self.<block>(), macro bodies, slices of a global's
// text), made by internal/hostile and checked to run in Jinja2 3.1: each
// is found, in the template itself, in a tokenizer_config.json and in a
// GGUF file. What the evaluator can spell is critical; a key it cannot
// prove safe on a Jinja global is at least high.
func TestTemplateEscapeTricks(t *testing.T) {
	want := map[string]scanners.Severity{"global text slices": scanners.SeverityHigh}
	for _, trick := range hostile.TemplateTricks() {
		t.Run(trick, func(t *testing.T) {
			src := hostile.ChatTemplateEscape(trick)
			sev := scanners.SeverityCritical
			if s, ok := want[trick]; ok {
				sev = s
			}
			hits, unparsed, first, limited := analyzeTemplate(src)
			if unparsed > 0 || limited {
				t.Errorf("%d tags not parsed (%s), limited %v", unparsed, first, limited)
			}
			top := scanners.Severity(0)
			for _, h := range hits {
				top = max(top, h.sev)
			}
			if top < sev {
				t.Fatalf("top %v, want %v: %+v\n%s", top, sev, hits, src)
			}
			if sev == scanners.SeverityCritical && topHit(hits, "__globals__") < sev {
				t.Errorf("__globals__ not spelled: %+v", hits)
			}
			for _, in := range []struct {
				path string
				data []byte
				rule string
			}{
				{"tokenizer_config.json", hostile.TokenizerConfig("chat_template", src), "models/chat-template-injection"},
				{"model.gguf", hostile.GGUFTemplate("tokenizer.chat_template", src), "models/gguf-template-injection"},
			} {
				fs, err := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactFile, Path: in.path}, in.data)
				if err != nil {
					t.Fatal(err)
				}
				var got scanners.Severity
				for _, f := range fs {
					if f.RuleID == in.rule {
						got = max(got, f.Severity)
					}
				}
				if got < sev {
					t.Errorf("%s: %s %v, want %v: %v", in.path, in.rule, got, sev, fs)
				}
			}
		})
	}
}

// TestTemplateGlobalKeys: a subscript or attribute of a Jinja global with
// a key the evaluator cannot prove safe is at least high; the attributes
// templates read of loop, self, cycler and namespace objects are quiet.
func TestTemplateGlobalKeys(t *testing.T) {
	for _, c := range []struct {
		src  string
		want scanners.Severity // 0: no hit
	}{
		{`{{ lipsum[messages[0]['content']] }}`, scanners.SeverityHigh},
		{`{{ cycler[k] }}`, scanners.SeverityHigh},
		{`{{ joiner[k] }}`, scanners.SeverityHigh},
		{`{{ namespace[k] }}`, scanners.SeverityHigh},
		{`{{ range[k] }}`, scanners.SeverityHigh},
		{`{{ dict[k] }}`, scanners.SeverityHigh},
		{`{{ self[k] }}`, scanners.SeverityHigh},
		{`{% for m in messages %}{{ loop[k] }}{% endfor %}`, scanners.SeverityHigh},
		{`{% for m in messages %}{{ loop.reset }}{% endfor %}`, scanners.SeverityHigh},
		{`{% set g = lipsum %}{{ g[k] }}`, scanners.SeverityHigh},
		{`{{ (lipsum ~ '')[3] }}`, scanners.SeverityHigh},
		{`{{ (cycler|string)[1:4] }}`, scanners.SeverityHigh},
		{`{{ messages|map(attribute=k)|list }}`, scanners.SeverityHigh},
		{`{{ getattr(messages, k) }}`, scanners.SeverityHigh},
		{`{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.depth }}{{ loop.cycle('a', 'b') }}{% if loop.changed(m) %}{% endif %}{% endfor %}`, 0},
		{`{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.current }}{% set j = joiner(', ') %}{{ j() }}`, 0},
		{`{% set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{{ ns.a }}{{ range(3)|list }}{{ dict(a=1)['a'] }}`, 0},
		{`{% block b %}x{% endblock %}{{ self.b() }}{{ lipsum(2) }}`, 0},
		{`{% set roles = {'user': 'U'} %}{{ roles[messages[0]['role']] }}`, 0},
	} {
		hits, _, _, _ := analyzeTemplate(c.src)
		var top scanners.Severity
		for _, h := range hits {
			top = max(top, h.sev)
		}
		if c.want == 0 && len(hits) > 0 || top < c.want {
			t.Errorf("%s: %+v, want %v", c.src, hits, c.want)
		}
	}
}

// TestTemplateRenderFolds: what block sets, filter blocks, macros, blocks
// and the text filters give is folded as Jinja2 renders it.
func TestTemplateRenderFolds(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{% set x %}a{{ 'b' }}c{% endset %}{{ lipsum[x] }}`, "abc"},
		{"{% set x %}\n  {% if y %}b{% endif %}\n  c\n{% endset %}{{ lipsum[x] }}", "b  c\n"},
		{"{% set x %}\n  {% if y %}b{% endif %}\n  c\n{% endset %}{{ lipsum[x] }}", "\n  b\n  c\n"},
		{`{% set x | upper %}ab{% endset %}{{ lipsum[x] }}`, "AB"},
		{`{% macro m(s) %}<{{ s }}>{% endmacro %}{{ lipsum[m('q')] }}`, "<q>"},
		{`{% set x %}{% for c in 'abc' %}{{ c }}{{ loop.cycle('-', '+') }}{% endfor %}{% endset %}{{ lipsum[x] }}`, "a-b+c-"},
		{`{{ lipsum[['a', 'b', 'c']|batch(2)|last|join] }}`, "c"},
		{`{{ lipsum['ab'|tojson] }}`, `"ab"`},
		{`{{ lipsum['a b'|center(7)] }}`, "  a b  "},
		{`{{ lipsum['aaa bbb'|wordwrap(3)] }}`, "aaa\nbbb"},
		{`{{ lipsum['&#97;<b>x</b>&lt;'|striptags] }}`, "ax<"},
		{`{{ lipsum['ab'|indent(2, true)] }}`, "  ab"},
		{`{{ lipsum['abcdef'|truncate(4, true, '.', 0)] }}`, "abc."},
		{`{{ lipsum['ab cd'|title] }}`, "Ab Cd"},
	} {
		hits, _, _, _ := analyzeTemplate(c.src)
		if topHit(hits, "subscript "+c.want+" of the global lipsum") == 0 {
			t.Errorf("%s: want the key %q, got %+v", c.src, c.want, hits)
		}
	}
}
