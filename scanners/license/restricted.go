package license

import "strings"

// Why a licence counts as restricted: it forbids commercial use, or allows
// research use only. Licences that allow commercial use under conditions
// (Llama's 700 million monthly users and acceptable-use policy, Gemma's
// prohibited uses, the OpenRAIL use restrictions) are not counted: a
// policy names them where they matter (docs/policies.md).
var restricted = []struct {
	id     string // an identifier, or a prefix ending in "-"
	why    string
	source string
}{
	{"CC-BY-NC-", "Creative Commons NonCommercial: no use primarily intended for commercial advantage", "https://creativecommons.org/licenses/by-nc/4.0/legalcode (section 1(i))"},
	{"NCGL-UK-2.0", "Non-Commercial Government Licence: no commercial use", "https://spdx.org/licenses/NCGL-UK-2.0.html"},
	{"PolyForm-Noncommercial-1.0.0", "PolyForm Noncommercial: noncommercial purposes only", "https://spdx.org/licenses/PolyForm-Noncommercial-1.0.0.html"},
	{"LicenseRef-hf-fair-noncommercial-research-license", "FAIR Noncommercial Research License: non-commercial research only", "https://huggingface.co/docs/hub/repositories-licenses"},
	{"LicenseRef-hf-h-research", "H Research License: research use only", "https://huggingface.co/docs/hub/repositories-licenses"},
	{"LicenseRef-hf-intel-research", "Intel Research Use License Agreement: research use only", "https://huggingface.co/docs/hub/repositories-licenses"},
	{"LicenseRef-hf-apple-amlr", "Apple Model License for Research: research use only", "https://huggingface.co/docs/hub/repositories-licenses"},
	{"LicenseRef-hf-deepfloyd-if-license", "DeepFloyd IF Research License Agreement: non-commercial research only", "https://huggingface.co/docs/hub/repositories-licenses"},
}

// Restricted reports whether expr, an expression Normalize returned, binds
// its user to a restricted licence: an identifier of the table, in every
// alternative of an OR (where one alternative is free, the user may choose
// it), anywhere in an AND. It returns the first such identifier and why.
func Restricted(expr string) (id, why string, ok bool) {
	p := &exprParser{toks: strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(expr))}
	r := p.or()
	if r == nil {
		return "", "", false
	}
	return r.id, r.why, true
}

type hit struct{ id, why string }

// exprParser walks an SPDX expression (already valid: Normalize checked
// it) by the grammar of SPDX 2.3 annex D: OR binds looser than AND, AND
// looser than WITH.
type exprParser struct {
	toks []string
	i    int
}

func (p *exprParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

// or returns a hit only when every alternative has one.
func (p *exprParser) or() *hit {
	h := p.and()
	for strings.EqualFold(p.peek(), "OR") {
		p.i++
		if o := p.and(); o == nil {
			h = nil
		} else if h != nil {
			continue
		}
	}
	return h
}

// and returns the first hit of its terms.
func (p *exprParser) and() *hit {
	h := p.term()
	for strings.EqualFold(p.peek(), "AND") {
		p.i++
		if o := p.term(); h == nil {
			h = o
		}
	}
	return h
}

func (p *exprParser) term() *hit {
	t := p.peek()
	p.i++
	var h *hit
	if t == "(" {
		h = p.or()
		if p.peek() == ")" {
			p.i++
		}
	} else {
		h = lookup(strings.TrimSuffix(t, "+"))
	}
	if strings.EqualFold(p.peek(), "WITH") {
		p.i += 2
	}
	return h
}

func lookup(id string) *hit {
	for _, r := range restricted {
		if id == r.id || strings.HasSuffix(r.id, "-") && strings.HasPrefix(id, r.id) {
			return &hit{id, r.why}
		}
	}
	return nil
}
