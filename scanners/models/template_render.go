package models

import (
	"html"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mlwarden/mlwarden/scanners"
)

// What a template renders is a value too: a {% set x %}…{% endset %} block,
// a {% filter %} block, a macro's call and self.<block>() give the text
// their bodies render, which a template then uses as an attribute name
// (issue 37: lipsum[x] with x a block set named __globals__ without one
// literal). The bodies are rendered abstractly, as the expressions are
// evaluated: data and the strings of {{ }} concatenated, both branches of
// an if, a for loop over a list or string the evaluator knows item by item
// (loop.cycle giving its argument for each), anything else unknown. Jinja2
// renders with the whitespace options of the runtime — transformers and
// llama-cpp-python set trim_blocks and lstrip_blocks, a plain Environment
// neither — so a body is rendered both ways.

// parsedTag is one tag of a template, parsed.
type parsedTag struct {
	out  *jnode
	st   *jstmt
	fail bool
}

// tnode is a tag in the template's block structure; a block statement
// ({% for %}, {% if %}, {% set x %}, {% macro %}, …) holds branches up to
// its end tag (else and elif start a branch).
type tnode struct {
	tag      int
	branches []*tbranch
}

type tbranch struct {
	kw    string // the keyword of the tag that starts it
	nodes []*tnode
	end   int // the tag that ends it (its data is the branch's last); -1: the template's end
}

type templateTree struct {
	tags   []jtag
	ps     []parsedTag
	leads  [2][]string // the data before each tag: plain, trim_blocks+lstrip_blocks
	nodes  map[int]*tnode
	macros map[string]*tbranch
	blocks map[string]*tbranch
}

// renderState is where a render is: the body a filter block filters, the
// loops it is inside, the whitespace mode (0: plain, 1: trim_blocks and
// lstrip_blocks), the macros and blocks being rendered (never re-entered;
// nil: not rendering).
type renderState struct {
	hole   []jval
	loops  []loopState
	mode   int
	active map[string]bool
	depth  int
}

type loopState struct {
	index int
	known bool
}

const (
	renderMaxDepth = 16 // nested renders (macros calling macros, blocks in set blocks)
	renderMaxIter  = 64 // items of a loop rendered one by one
)

var blockOpeners = map[string]bool{
	"for": true, "if": true, "macro": true, "call": true, "filter": true, "block": true, "with": true,
	"autoescape": true, "trans": true, "generation": true,
}

// buildTree finds the block structure of a template's tags. Unbalanced
// tags are tolerated: an end tag with no opener is a plain tag, an opener
// never closed runs to the end.
func buildTree(tags []jtag, ps []parsedTag) *templateTree {
	t := &templateTree{tags: tags, ps: ps, nodes: map[int]*tnode{}, macros: map[string]*tbranch{}, blocks: map[string]*tbranch{}}
	for mode := range 2 {
		t.leads[mode] = make([]string, len(tags))
		for i := range tags {
			t.leads[mode][i] = leadText(tags, i, mode == 1)
		}
	}
	root := &tbranch{end: -1}
	type frame struct {
		n  *tnode
		kw string
	}
	var stack []frame
	cur := func() *tbranch {
		if len(stack) == 0 {
			return root
		}
		b := stack[len(stack)-1].n.branches
		return b[len(b)-1]
	}
	for i := range tags {
		n := &tnode{tag: i}
		t.nodes[i] = n
		kw := ""
		if p := ps[i]; p.st != nil {
			kw = p.st.keyword
		} else if tags[i].stmt && len(tags[i].toks) > 0 {
			kw = tags[i].toks[0].val
		}
		st := ps[i].st
		switch {
		case !tags[i].stmt:
			cur().nodes = append(cur().nodes, n)
		case blockOpeners[kw] || kw == "set" && st != nil && st.block && !ps[i].fail:
			n.branches = []*tbranch{{kw: kw, end: -1}}
			cur().nodes = append(cur().nodes, n)
			stack = append(stack, frame{n, kw})
			if st != nil && !ps[i].fail {
				switch {
				case kw == "macro" && st.name != "":
					t.macros[st.name] = n.branches[0]
				case kw == "block" && len(st.exprs) > 0 && st.exprs[0].kind == jnName:
					t.blocks[st.exprs[0].name] = n.branches[0]
				}
			}
		case (kw == "elif" || kw == "else" || kw == "pluralize") && len(stack) > 0 &&
			(stack[len(stack)-1].kw == "if" || kw == "else" && stack[len(stack)-1].kw == "for" || kw == "pluralize" && stack[len(stack)-1].kw == "trans"):
			top := stack[len(stack)-1].n
			top.branches[len(top.branches)-1].end = i
			top.branches = append(top.branches, &tbranch{kw: kw, end: -1})
		case strings.HasPrefix(kw, "end") && len(kw) > 3:
			k := len(stack) - 1
			for k >= 0 && stack[k].kw != kw[3:] {
				k--
			}
			if k < 0 {
				cur().nodes = append(cur().nodes, n)
				continue
			}
			for j := len(stack) - 1; j >= k; j-- {
				b := stack[j].n.branches
				b[len(b)-1].end = i
			}
			stack = stack[:k]
		default:
			cur().nodes = append(cur().nodes, n)
		}
	}
	return t
}

func isJBlank(s string) bool {
	return strings.TrimLeft(s, " \t") == ""
}

// leadText is the data before tags[i] as rendered: whitespace control,
// and with trim (trim_blocks, lstrip_blocks) the newline after a block tag
// and the indentation before one.
func leadText(tags []jtag, i int, trim bool) string {
	l := tags[i].lead
	if i > 0 && tags[i-1].trimRight {
		l = strings.TrimLeft(l, " \t\r\n\f\v")
	} else if trim && i > 0 && tags[i-1].stmt {
		l = strings.TrimPrefix(strings.TrimPrefix(l, "\r"), "\n")
	}
	if tags[i].trimLeft {
		l = strings.TrimRight(l, " \t\r\n\f\v")
	} else if trim && tags[i].stmt && !tags[i].plus {
		lineStart := i == 0 || strings.ContainsRune(tags[i].lead, '\n')
		if k := strings.LastIndexByte(l, '\n'); lineStart && isJBlank(l[k+1:]) {
			l = l[:k+1]
		}
	}
	return l
}

// stmtAt evaluates statement tag i: a block set and a filter block filter
// what their body renders.
func (e *templateEval) stmtAt(i int, st *jstmt) {
	if (st.keyword == "set" && st.block || st.keyword == "filter") && e.tpl != nil && e.tpl.nodes[i] != nil && len(e.tpl.nodes[i].branches) > 0 {
		e.rs.hole = append(e.rs.hole, e.renderBoth(e.tpl.nodes[i].branches[0]))
		defer func() { e.rs.hole = e.rs.hole[:len(e.rs.hole)-1] }()
	}
	e.stmt(st)
}

// renderBoth renders b in the current mode, or in both when not rendering.
func (e *templateEval) renderBoth(b *tbranch) jval {
	return e.renderActive("", b)
}

func (e *templateEval) concat(a, b jval) jval {
	return e.cross(stringish(a), stringish(b), func(x, y string) string { return x + y })
}

// renderBranch renders a branch's tags and data; unknown as soon as a part
// is.
func (e *templateEval) renderBranch(b *tbranch) jval {
	if b == nil || e.rs.depth >= renderMaxDepth || !e.spend(16) {
		return jUnknown
	}
	e.rs.depth++
	defer func() { e.rs.depth-- }()
	acc := jstr("")
	for _, n := range b.nodes {
		acc = e.concat(acc, jstr(e.tpl.leads[e.rs.mode][n.tag]))
		acc = e.concat(acc, e.renderNode(n))
		if len(acc.strs) == 0 {
			return jUnknown
		}
	}
	if b.end >= 0 {
		acc = e.concat(acc, jstr(e.tpl.leads[e.rs.mode][b.end]))
	}
	return acc
}

func (e *templateEval) renderNode(n *tnode) jval {
	if !e.spend(16) {
		return jUnknown
	}
	p, t := e.tpl.ps[n.tag], e.tpl.tags[n.tag]
	switch {
	case p.fail:
		return jUnknown
	case p.out != nil:
		v := e.eval(p.out, false)
		if v.unknown || len(v.strs) == 0 && !v.isNum {
			return jUnknown
		}
		return stringish(v)
	case p.st == nil:
		return jstr("")
	}
	st := p.st
	switch st.keyword {
	case "raw":
		return jstr(t.raw)
	case "set":
		e.stmtAt(n.tag, st)
		return jstr("")
	case "macro":
		return jstr("")
	case "if":
		for _, x := range st.exprs {
			e.eval(x, false)
		}
		out := jval{}
		hasElse := false
		for _, b := range n.branches {
			hasElse = hasElse || b.kw == "else"
			out = e.union(out, e.renderBranch(b))
		}
		if !hasElse {
			out = e.union(out, jstr(""))
		}
		if len(out.strs) == 0 {
			return jUnknown
		}
		return out
	case "for":
		return e.renderFor(n, st)
	case "filter":
		e.rs.hole = append(e.rs.hole, e.renderBranch(n.branches[0]))
		defer func() { e.rs.hole = e.rs.hole[:len(e.rs.hole)-1] }()
		if len(st.exprs) == 0 {
			return jUnknown
		}
		return stringish(e.eval(st.exprs[0], false))
	case "with":
		e.stmt(st)
		return e.renderBranch(n.branches[0])
	case "block", "autoescape", "trans", "generation":
		if len(n.branches) == 0 {
			return jUnknown
		}
		return e.renderBranch(n.branches[0])
	case "call", "include", "import", "extends", "from":
		e.stmt(st)
		return jUnknown
	}
	e.stmt(st)
	return jstr("")
}

// seqOf returns the items iterating v gives when they are all known.
func (e *templateEval) seqOf(v jval) ([]jval, bool) {
	switch {
	case v.unknown || v.subset:
		return nil, false
	case len(v.items) > 0:
		return v.items, true
	case len(v.keys) > 0:
		out := make([]jval, 0, len(v.keys))
		for _, k := range v.keys {
			out = append(out, jstr(k))
		}
		return out, true
	case len(v.strs) == 1:
		var out []jval
		for _, r := range v.strs[0] {
			out = e.addItems(out, jstr(string(r)))
		}
		return out, true
	}
	return nil, false
}

func (e *templateEval) renderFor(n *tnode, st *jstmt) jval {
	if len(st.exprs) != 1 || len(st.targets) == 0 {
		return jUnknown
	}
	items, ok := e.seqOf(e.eval(st.exprs[0], false))
	if !ok || len(items) > renderMaxIter {
		return jUnknown
	}
	if len(items) == 0 {
		if len(n.branches) > 1 {
			return e.renderBranch(n.branches[1])
		}
		return jstr("")
	}
	names := map[string]jval{}
	var bind func(t *jnode, v jval)
	bind = func(t *jnode, v jval) {
		switch t.kind {
		case jnName:
			if _, saved := names[t.name]; !saved {
				old, had := e.env[t.name]
				if !had {
					old.ns = "\x00unset"
				}
				names[t.name] = old
			}
			e.env[t.name] = v
		case jnTuple:
			for k, x := range t.args {
				if k < len(v.items) {
					bind(x, v.items[k])
				} else {
					bind(x, jUnknown)
				}
			}
		}
	}
	defer func() {
		for k, old := range names {
			if old.ns == "\x00unset" {
				delete(e.env, k)
			} else {
				e.env[k] = old
			}
		}
	}()
	acc := jstr("")
	for k, it := range items {
		bind(st.targets[0], it)
		e.rs.loops = append(e.rs.loops, loopState{index: k, known: true})
		acc = e.concat(acc, e.renderBranch(n.branches[0]))
		e.rs.loops = e.rs.loops[:len(e.rs.loops)-1]
		if len(acc.strs) == 0 {
			return jUnknown
		}
	}
	return acc
}

// renderMacro renders the body of macro name called with args and kwargs.
func (e *templateEval) renderMacro(name string, prms []jkwarg, args []jval, kwargs []jkwarg) jval {
	if e.tpl == nil || e.rs.active["macro "+name] {
		return jUnknown
	}
	body := e.tpl.macros[name]
	if body == nil {
		return jUnknown
	}
	saved := map[string]*jval{}
	set := func(k string, v jval) {
		if _, ok := saved[k]; !ok {
			if old, had := e.env[k]; had {
				saved[k] = &old
			} else {
				saved[k] = nil
			}
		}
		e.env[k] = v
	}
	for i, prm := range prms {
		v := jUnknown
		switch {
		case i < len(args):
			v = args[i]
		case prm.val != nil:
			v = e.eval(prm.val, false)
		}
		set(prm.name, v)
	}
	for _, k := range kwargs {
		set(k.name, e.eval(k.val, false))
	}
	defer func() {
		for k, old := range saved {
			if old == nil {
				delete(e.env, k)
			} else {
				e.env[k] = *old
			}
		}
	}()
	return e.renderActive("macro "+name, body)
}

// renderBlock renders {% block name %} for self.name().
func (e *templateEval) renderBlock(name string) jval {
	if e.tpl == nil || e.tpl.blocks[name] == nil || e.rs.active["block "+name] {
		return jUnknown
	}
	return e.renderActive("block "+name, e.tpl.blocks[name])
}

// renderActive renders b as the macro or block key ("": a block set's or
// filter block's body): in the current mode when rendering, else in both.
func (e *templateEval) renderActive(key string, b *tbranch) jval {
	if e.rs.active == nil {
		e.rs.active = map[string]bool{key: true}
		defer func() { e.rs.active, e.rs.mode = nil, 0 }()
		e.rs.mode = 0
		a := e.renderBranch(b)
		e.rs.mode = 1
		return e.union(a, e.renderBranch(b))
	}
	if key != "" {
		e.rs.active[key] = true
		defer delete(e.rs.active, key)
	}
	return e.renderBranch(b)
}

// cycle is loop.cycle(args): the argument for the iteration being
// rendered, or any of them.
func (e *templateEval) cycle(args []jval) jval {
	if len(args) == 0 {
		return jUnknown
	}
	if k := len(e.rs.loops); k > 0 && e.rs.loops[k-1].known {
		return args[e.rs.loops[k-1].index%len(args)]
	}
	out := jval{}
	for _, a := range args {
		out = e.union(out, a)
	}
	return out
}

// globalKey reports a subscript of a Jinja global (or of what a filter or
// operator made of one) whose key is not a name the evaluator knows: a
// number into its text, or a key built at render time.
func (e *templateEval) globalKey(obj, key jval, off int) {
	if obj.glob == "" {
		return
	}
	switch {
	case key.isNum && len(key.strs) == 0:
		e.hit(scanners.SeverityHigh, "subscript ["+strconv.FormatInt(key.num, 10)+"] of the global "+obj.glob,
			"it takes characters out of how a Jinja global prints, which is how templates spell the Python internals they reach without writing them; no template reads them", off)
	case !key.known():
		e.hit(scanners.SeverityHigh, "a subscript of the global "+obj.glob+" with a key built at render time",
			"the key is computed where mlwarden cannot follow it, and a subscript of a Jinja global walks the attributes of the function object itself, which lead to its module's globals; no template reads them", off)
	}
}

// method folds the string and dict methods a template can call to rebuild
// text.
func (e *templateEval) method(name string, obj jval, args []jval) (jval, bool) {
	arg := func(i int) (string, bool) {
		if i < len(args) && args[i].known() && len(args[i].strs) == 1 {
			return args[i].strs[0], true
		}
		return "", false
	}
	num := func(i int, def int64) (int64, bool) {
		if i >= len(args) {
			return def, true
		}
		return args[i].num, args[i].isNum
	}
	one := func() (string, bool) {
		if obj.known() && len(obj.strs) == 1 {
			return obj.strs[0], true
		}
		return "", false
	}
	items := func(parts []string) jval {
		var out []jval
		for _, p := range parts {
			out = e.addItems(out, jstr(p))
		}
		return jval{items: out}
	}
	switch name {
	case "split", "rsplit":
		s, ok := one()
		if !ok {
			return jUnknown, true
		}
		if max, ok := num(1, -1); !ok || max >= 0 {
			return jUnknown, true
		}
		if len(args) == 0 {
			return items(strings.Fields(s)), true
		}
		sep, ok := arg(0)
		if !ok || sep == "" {
			return jUnknown, true
		}
		return items(strings.Split(s, sep)), true
	case "splitlines":
		s, ok := one()
		if !ok {
			return jUnknown, true
		}
		return items(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })), true
	case "partition", "rpartition":
		s, ok1 := one()
		sep, ok2 := arg(0)
		if !ok1 || !ok2 || sep == "" {
			return jUnknown, true
		}
		k := strings.Index(s, sep)
		if name == "rpartition" {
			k = strings.LastIndex(s, sep)
		}
		if k < 0 {
			if name == "rpartition" {
				return items([]string{"", "", s}), true
			}
			return items([]string{s, "", ""}), true
		}
		return items([]string{s[:k], sep, s[k+len(sep):]}), true
	case "removeprefix", "removesuffix":
		a, ok := arg(0)
		if !ok {
			return jUnknown, true
		}
		f := strings.TrimPrefix
		if name == "removesuffix" {
			f = strings.TrimSuffix
		}
		return e.mapStrs(obj, func(s string) string { return f(s, a) }), true
	case "center", "ljust", "rjust":
		w, ok := num(0, 0)
		fill := " "
		if len(args) > 1 {
			f, ok2 := arg(1)
			if !ok2 || utf8.RuneCountInString(f) != 1 {
				return jUnknown, true
			}
			fill = f
		}
		if !ok || len(args) == 0 {
			return jUnknown, true
		}
		return e.mapStrs(obj, func(s string) string { return pyPad(name, s, w, fill) }), true
	case "zfill":
		w, ok := num(0, 0)
		if !ok || len(args) == 0 {
			return jUnknown, true
		}
		return e.mapStrs(obj, func(s string) string { return pyPad("rjust", s, w, "0") }), true
	case "title":
		return e.mapStrs(obj, pyTitle), true
	case "capitalize":
		return e.mapStrs(obj, pyCapitalize), true
	case "swapcase":
		return e.mapStrs(obj, func(s string) string {
			return strings.Map(func(r rune) rune {
				if unicode.IsUpper(r) {
					return unicode.ToLower(r)
				}
				return unicode.ToUpper(r)
			}, s)
		}), true
	case "keys":
		if len(obj.keys) > 0 {
			return items(obj.keys), true
		}
	case "items":
		if len(obj.keys) > 0 {
			return e.pairs(obj.keys), true
		}
	}
	return jval{}, false
}

func (e *templateEval) pairs(keys []string) jval {
	var out []jval
	for _, k := range keys {
		out = e.addItems(out, jval{items: []jval{jstr(k), jUnknown}})
	}
	return jval{items: out}
}

// pyPad is str.center, ljust and rjust.
func pyPad(how, s string, width int64, fill string) string {
	n := int64(utf8.RuneCountInString(s))
	if width > jvalMaxLen {
		width = jvalMaxLen + 1
	}
	marg := width - n
	if marg <= 0 {
		return s
	}
	var left int64
	switch how {
	case "center":
		left = marg/2 + (marg & width & 1)
	case "rjust":
		left = marg
	}
	return strings.Repeat(fill, int(left)) + s + strings.Repeat(fill, int(marg-left))
}

// pyCapitalize is str.capitalize.
func pyCapitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + strings.ToLower(s[n:])
}

// pyTitle is Jinja's title filter: each word (after -, whitespace, (, {,
// [, <) capitalised.
func pyTitle(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		sep := r == '-' || unicode.IsSpace(r) || r == '(' || r == '{' || r == '[' || r == '<'
		switch {
		case sep:
			b.WriteRune(r)
			start = true
		case start:
			b.WriteRune(unicode.ToUpper(r))
			start = false
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// striptags is Markup.striptags: comments and tags removed, whitespace
// collapsed, entities decoded.
func striptags(s string) string {
	for {
		i := strings.Index(s, "<!--")
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], "-->")
		if j < 0 {
			break
		}
		s = s[:i] + s[i+j+3:]
	}
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			break
		}
		s = s[:i] + s[i+j+1:]
	}
	return html.UnescapeString(strings.Join(strings.Fields(s), " "))
}

// htmlEscape is markupsafe's escape.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&#34;").Replace(s)
}

// pyJSONString is json.dumps of a string (ensure_ascii) as Jinja's tojson
// writes it (<, >, &, ' escaped).
func pyJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\'' || r > 0x7e && r <= 0xffff:
			b.WriteString(`\u` + strconv.FormatInt(int64(r)|0x10000, 16)[1:])
		case r > 0xffff:
			r -= 0x10000
			b.WriteString(`\u` + strconv.FormatInt(int64(0xd800+(r>>10))|0x10000, 16)[1:])
			b.WriteString(`\u` + strconv.FormatInt(int64(0xdc00+(r&0x3ff))|0x10000, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tojson is the JSON text of v when v is one known value.
func (e *templateEval) tojson(v jval, depth int) (string, bool) {
	switch {
	case depth > 4 || v.unknown || v.subset:
		return "", false
	case v.isBool && len(v.strs) == 0:
		if v.num != 0 {
			return "true", true
		}
		return "false", true
	case v.isNum && len(v.strs) == 0:
		return strconv.FormatInt(v.num, 10), true
	case len(v.strs) == 1 && len(v.items) == 0:
		return pyJSONString(v.strs[0]), true
	case len(v.items) > 0 && len(v.strs) == 0:
		parts := make([]string, 0, len(v.items))
		for _, it := range v.items {
			s, ok := e.tojson(it, depth+1)
			if !ok || !e.spend(len(s)) {
				return "", false
			}
			parts = append(parts, s)
		}
		s := "[" + strings.Join(parts, ", ") + "]"
		return s, len(s) <= jvalMaxLen
	}
	return "", false
}

// wordwrap is Jinja's wordwrap filter: Python's textwrap on each line
// (whitespace chunks, hyphens not broken on), lines joined by wrap.
func wordwrap(s string, width int, breakLong bool, wrap string) string {
	var out []string
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' }) {
		out = append(out, strings.Join(textwrap(line, width, breakLong), wrap))
	}
	return strings.Join(out, wrap)
}

func textwrap(text string, width int, breakLong bool) []string {
	// Chunks: runs of whitespace and of the rest, in order, reversed.
	var chunks [][]rune
	rs := []rune(text)
	for i := 0; i < len(rs); {
		j := i
		sp := unicode.IsSpace(rs[i])
		for j < len(rs) && unicode.IsSpace(rs[j]) == sp {
			j++
		}
		chunks = append(chunks, rs[i:j])
		i = j
	}
	slices.Reverse(chunks)
	blank := func(c []rune) bool { return strings.TrimSpace(string(c)) == "" }
	var lines []string
	for len(chunks) > 0 {
		var cur [][]rune
		curLen := 0
		if blank(chunks[len(chunks)-1]) && len(lines) > 0 {
			chunks = chunks[:len(chunks)-1]
		}
		for len(chunks) > 0 {
			l := len(chunks[len(chunks)-1])
			if curLen+l > width {
				break
			}
			cur = append(cur, chunks[len(chunks)-1])
			chunks = chunks[:len(chunks)-1]
			curLen += l
		}
		if len(chunks) > 0 && len(chunks[len(chunks)-1]) > width {
			left := max(width-curLen, 1)
			if breakLong {
				last := chunks[len(chunks)-1]
				left = min(left, len(last))
				cur = append(cur, last[:left])
				chunks[len(chunks)-1] = last[left:]
			} else if len(cur) == 0 {
				cur = append(cur, chunks[len(chunks)-1])
				chunks = chunks[:len(chunks)-1]
			}
		}
		if len(cur) > 0 && blank(cur[len(cur)-1]) {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 {
			var b strings.Builder
			for _, c := range cur {
				b.WriteString(string(c))
			}
			lines = append(lines, b.String())
		}
		if len(lines) > jvalMaxLen {
			break
		}
	}
	return lines
}

// truncate is Jinja's truncate filter.
func truncate(s string, length int, killwords bool, end string, leeway int) string {
	rs := []rune(s)
	if len(rs) <= length+leeway {
		return s
	}
	cut := max(length-utf8.RuneCountInString(end), 0)
	if killwords {
		return string(rs[:min(cut, len(rs))]) + end
	}
	r := string(rs[:min(cut, len(rs))])
	if k := strings.LastIndexByte(r, ' '); k >= 0 {
		r = r[:k]
	}
	return r + end
}

// indent is Jinja's indent filter.
func indent(s, pad string, first, blank bool) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if i == 0 && !first || !blank && strings.TrimSpace(l) == "" {
			continue
		}
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n")
}

// foldFilter folds the filters applyFilter leaves: those that cut, pad,
// wrap, quote or regroup text and lists.
func (e *templateEval) foldFilter(name string, in jval, args []jval, kws map[string]jval) jval {
	opt := func(i int, k string) (jval, bool) {
		if v, ok := kws[k]; ok {
			return v, true
		}
		if i >= 0 && i < len(args) {
			return args[i], true
		}
		return jval{}, false
	}
	numOpt := func(i int, k string, def int64) (int64, bool) {
		v, ok := opt(i, k)
		if !ok {
			return def, true
		}
		return v.num, v.isNum && len(v.strs) == 0
	}
	strOpt := func(i int, k, def string) (string, bool) {
		v, ok := opt(i, k)
		if !ok {
			return def, true
		}
		if v.known() && len(v.strs) == 1 {
			return v.strs[0], true
		}
		return "", false
	}
	boolOpt := func(i int, k string, def bool) (bool, bool) {
		v, ok := opt(i, k)
		if !ok {
			return def, true
		}
		return v.num != 0, v.isNum && len(v.strs) == 0
	}
	switch name {
	case "batch", "slice":
		size, ok := numOpt(0, map[string]string{"batch": "linecount", "slice": "slices"}[name], 0)
		seq, known := e.seqOf(in)
		if !ok || !known || size <= 0 {
			return jUnknown
		}
		fill, hasFill := opt(1, "fill_with")
		var groups [][]jval
		if name == "batch" {
			for i := 0; i < len(seq); i += int(size) {
				g := slices.Clone(seq[i:min(i+int(size), len(seq))])
				for hasFill && len(g) < int(size) {
					g = append(g, fill)
				}
				groups = append(groups, g)
			}
		} else {
			per, extra, offset := len(seq)/int(size), len(seq)%int(size), 0
			for k := 0; k < int(min(size, jvalMaxItems)); k++ {
				start := offset + k*per
				if k < extra {
					offset++
				}
				g := slices.Clone(seq[start:min(offset+(k+1)*per, len(seq))])
				if hasFill && k >= extra {
					g = append(g, fill)
				}
				groups = append(groups, g)
			}
		}
		out := jval{}
		for _, g := range groups {
			out.items = e.addItems(out.items, jval{items: g})
		}
		return out
	case "tojson":
		if s, ok := e.tojson(in, 0); ok {
			return jstr(s)
		}
		if len(in.strs) > 1 && len(in.items) == 0 && !in.isNum {
			return e.mapStrs(in, pyJSONString)
		}
		return jUnknown
	case "wordwrap":
		w, ok1 := numOpt(0, "width", 79)
		brk, ok2 := boolOpt(1, "break_long_words", true)
		wrap, ok3 := strOpt(2, "wrapstring", "\n")
		if !ok1 || !ok2 || !ok3 || w <= 0 {
			return jUnknown
		}
		return e.mapStrs(in, func(s string) string { return wordwrap(s, int(min(w, jvalMaxLen)), brk, wrap) })
	case "center":
		w, ok := numOpt(0, "width", 80)
		if !ok {
			return jUnknown
		}
		return e.mapStrs(in, func(s string) string { return pyPad("center", s, w, " ") })
	case "indent":
		pad := ""
		if v, ok := opt(0, "width"); ok && len(v.strs) == 1 && !v.unknown {
			pad = v.strs[0]
		} else if w, ok := numOpt(0, "width", 4); ok {
			pad = strings.Repeat(" ", int(min(max(w, 0), jvalMaxLen+1)))
		} else {
			return jUnknown
		}
		first, ok1 := boolOpt(1, "first", false)
		blank, ok2 := boolOpt(2, "blank", false)
		if !ok1 || !ok2 {
			return jUnknown
		}
		return e.mapStrs(in, func(s string) string { return indent(s, pad, first, blank) })
	case "truncate":
		length, ok1 := numOpt(0, "length", 255)
		kill, ok2 := boolOpt(1, "killwords", false)
		end, ok3 := strOpt(2, "end", "...")
		leeway, ok4 := numOpt(3, "leeway", 5)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return jUnknown
		}
		return e.mapStrs(in, func(s string) string {
			return truncate(s, int(min(max(length, 0), jvalMaxLen+1)), kill, end, int(min(max(leeway, 0), jvalMaxLen+1)))
		})
	case "title":
		return e.mapStrs(in, pyTitle)
	case "capitalize":
		return e.mapStrs(in, pyCapitalize)
	case "striptags":
		return e.mapStrs(in, striptags)
	case "e", "escape", "forceescape":
		return e.mapStrs(in, htmlEscape)
	case "urlencode":
		safe := true
		for _, s := range in.strs {
			safe = safe && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/") == ""
		}
		if safe {
			return in
		}
		return jUnknown
	case "int":
		if in.isNum && len(in.strs) == 0 {
			return in
		}
		if in.known() && len(in.strs) == 1 {
			if v, err := strconv.ParseInt(strings.TrimSpace(in.strs[0]), 10, 64); err == nil {
				return jval{num: v, isNum: true}
			}
		}
		return jUnknown
	case "length", "count":
		switch {
		case in.unknown || in.subset:
		case len(in.items) > 0:
			return jval{num: int64(len(in.items)), isNum: true}
		case len(in.keys) > 0:
			return jval{num: int64(len(in.keys)), isNum: true}
		case len(in.strs) == 1:
			return jval{num: int64(utf8.RuneCountInString(in.strs[0])), isNum: true}
		}
		return jUnknown
	case "sum":
		seq, ok := e.seqOf(in)
		if !ok || len(in.items) == 0 {
			return jUnknown
		}
		var t int64
		for _, it := range seq {
			if !it.isNum || len(it.strs) > 0 {
				return jUnknown
			}
			t += it.num
		}
		return jval{num: t, isNum: true}
	case "select", "reject", "selectattr", "rejectattr", "unique", "sort":
		seq, ok := e.seqOf(in)
		if !ok {
			if len(in.items) > 0 {
				return jval{items: in.items, subset: true}
			}
			return jUnknown
		}
		return jval{items: seq, subset: true}
	case "random", "min", "max":
		if len(in.items) == 0 && len(in.keys) == 0 && len(in.strs) == 0 {
			return jUnknown
		}
		return e.elems(in)
	case "items", "dictsort":
		if len(in.keys) == 0 || in.unknown {
			return jUnknown
		}
		keys := in.keys
		if name == "dictsort" {
			keys = slices.Clone(keys)
			slices.SortFunc(keys, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
		}
		return e.pairs(keys)
	case "map":
		if _, ok := kws["attribute"]; ok || len(args) == 0 || !args[0].known() || len(args[0].strs) != 1 {
			return jUnknown
		}
		f := args[0].strs[0]
		if f == "attr" || f == "map" {
			return jUnknown
		}
		seq, ok := e.seqOf(in)
		if !ok {
			return jUnknown
		}
		out := jval{}
		for _, it := range seq {
			out.items = e.addItems(out.items, e.applyFilter(f, it, args[1:], kws, 0))
		}
		return out
	}
	return jUnknown
}
