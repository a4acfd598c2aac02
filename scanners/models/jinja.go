package models

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Jinja reader for chat templates: a lexer that splits a template the way
// Jinja2's lexer does (data, {{ }}, {% %}, {# #}, raw blocks, whitespace
// control, block ends only outside brackets, Python string escapes) and a
// recursive-descent parser of Jinja2's expression grammar and statement
// headers, building a small AST that template.go analyses.
//
// Why our own and not a library: the Go Jinja engines the module proxy
// serves do not fit a scanner. github.com/nikolalohinski/gonja/v2 (v2.9.1)
// decodes only \" and \' in string literals, so "\x5f\x5fclass\x5f\x5f" —
// the most common obfuscation of a dunder — stays eight literal characters
// for it while Jinja2 reads __class__; it stops at the first syntax error
// and rejects extension tags that real chat templates use ({% generation
// %}), so an attacker picks whichever construct the two read differently.
// github.com/ardanlabs/jinja keeps its AST unexported (it only renders). A
// scanner needs Jinja2's exact lexing, an AST it can walk, and a parser
// that never gives up: a tag it cannot parse is still checked token by
// token, and the tags around it are parsed as usual.

type jtokKind uint8

const (
	jtEOF jtokKind = iota
	jtName
	jtString
	jtInt
	jtFloat
	jtOp
)

type jtok struct {
	kind jtokKind
	val  string // a name, an operator, a decoded string, a number's text
	off  int    // byte offset in the template
}

// jtag is one {{ }} or {% %} of a template.
type jtag struct {
	stmt bool // {% %}
	off  int  // offset of its opening delimiter
	end  int  // offset after its closing delimiter
	toks []jtok
	// lead is the data before the tag (since the previous tag, comments
	// left out); raw is a raw block's text.
	lead, raw string
	// Whitespace control: {%- / {{- (trimLeft), -%} / -}} (trimRight),
	// {%+ (plus: no lstrip_blocks).
	trimLeft, trimRight, plus bool
}

// jinjaMaxTags bounds the tags read from one template (a 1 MiB template of
// "{{a}}" has 200,000; real ones have a few hundred).
const jinjaMaxTags = 1 << 17

// lexTemplate splits a template into its tags, each tokenised. Data and
// comments are dropped; a raw block is data. It never fails: an
// unterminated tag or string runs to the end of the template, as the text
// Jinja2 would refuse to compile anyway.
func lexTemplate(src string) (tags []jtag, truncated bool) {
	i := 0
	dataStart := 0
	var lead strings.Builder // data before the next tag, comments left out
	for i < len(src) {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 {
			break
		}
		i += j
		if i+1 >= len(src) {
			break
		}
		switch src[i+1] {
		case '#':
			k := strings.Index(src[i+2:], "#}")
			if k < 0 {
				return tags, truncated
			}
			lead.WriteString(src[dataStart:i])
			i += 2 + k + 2
			dataStart = i
			continue
		case '{', '%':
		default:
			i++
			continue
		}
		if len(tags) >= jinjaMaxTags {
			return tags, true
		}
		stmt := src[i+1] == '%'
		start := i
		lead.WriteString(src[dataStart:i])
		t := jtag{stmt: stmt, off: start, lead: lead.String()}
		lead.Reset()
		i += 2
		if i < len(src) && (src[i] == '-' || src[i] == '+') {
			t.trimLeft, t.plus = src[i] == '-', src[i] == '+'
			i++
		}
		toks, next := lexTag(src, i, stmt)
		i = next
		t.end, t.toks = i, toks
		t.trimRight = i >= 3 && src[i-3] == '-' && (strings.HasSuffix(src[:i], "}}") || strings.HasSuffix(src[:i], "%}"))
		if stmt && len(toks) > 0 && toks[0].kind == jtName && toks[0].val == "raw" {
			// {% raw %}…{% endraw %}: everything up to endraw is data.
			k := rawEnd(src, i)
			body := src[i:k]
			if e := strings.LastIndex(body, "{%"); e >= 0 {
				body = body[:e]
			}
			t.raw = body
			tags = append(tags, t)
			i = k
			dataStart = i
			continue
		}
		tags = append(tags, t)
		dataStart = i
	}
	return tags, truncated
}

// rawEnd returns the offset after the {% endraw %} that closes a raw block
// starting at i, or the end of the template.
func rawEnd(src string, i int) int {
	for {
		k := strings.Index(src[i:], "{%")
		if k < 0 {
			return len(src)
		}
		j := i + k + 2
		if j < len(src) && (src[j] == '-' || src[j] == '+') {
			j++
		}
		for j < len(src) && isJSpace(src[j]) {
			j++
		}
		if strings.HasPrefix(src[j:], "endraw") {
			j += len("endraw")
			for j < len(src) && isJSpace(src[j]) {
				j++
			}
			if j < len(src) && (src[j] == '-' || src[j] == '+') {
				j++
			}
			if strings.HasPrefix(src[j:], "%}") {
				return j + 2
			}
		}
		i += k + 2
	}
}

func isJSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// jinjaOps are Jinja2's operators, longest first.
var jinjaOps = []string{"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"}

// lexTag tokenises a tag's content from i to its closing delimiter (}} or
// %}, optionally preceded by - or +), which ends the tag only when every
// bracket opened inside it is closed, as in Jinja2. It returns the tokens
// and the offset after the delimiter.
func lexTag(src string, i int, stmt bool) ([]jtok, int) {
	closer := "}}"
	if stmt {
		closer = "%}"
	}
	var toks []jtok
	depth := 0
	for i < len(src) {
		c := src[i]
		if isJSpace(c) {
			i++
			continue
		}
		if depth == 0 {
			if strings.HasPrefix(src[i:], closer) {
				return toks, i + 2
			}
			if (c == '-' || c == '+') && strings.HasPrefix(src[i+1:], closer) {
				return toks, i + 3
			}
		}
		switch {
		case c == '\'' || c == '"':
			s, next := lexString(src, i)
			toks = append(toks, jtok{kind: jtString, val: s, off: i})
			i = next
		case c >= '0' && c <= '9':
			// After a dot only an integer is lexed (a.1.2 is a, 1, 2), as
			// Jinja2's float pattern does not match after a dot.
			afterDot := len(toks) > 0 && toks[len(toks)-1].kind == jtOp && toks[len(toks)-1].val == "."
			j, float := lexNumber(src, i, afterDot)
			k := jtInt
			if float {
				k = jtFloat
			}
			toks = append(toks, jtok{kind: k, val: src[i:j], off: i})
			i = j
		case c == '_' || c < utf8.RuneSelf && unicode.IsLetter(rune(c)) || c >= utf8.RuneSelf:
			j := i
			for j < len(src) {
				r, n := utf8.DecodeRuneInString(src[j:])
				if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || j > i && unicode.Is(unicode.Mn, r) {
					j += n
					continue
				}
				break
			}
			if j == i { // a character Jinja2 does not lex
				_, n := utf8.DecodeRuneInString(src[i:])
				toks = append(toks, jtok{kind: jtOp, val: src[i : i+n], off: i})
				i += n
				continue
			}
			toks = append(toks, jtok{kind: jtName, val: src[i:j], off: i})
			i = j
		default:
			op := ""
			for _, o := range jinjaOps {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				op = src[i : i+1]
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			}
			toks = append(toks, jtok{kind: jtOp, val: op, off: i})
			i += len(op)
		}
	}
	return toks, len(src)
}

func lexNumber(src string, i int, intOnly bool) (int, bool) {
	j := i
	float := false
	if intOnly {
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			j++
		}
		return j, false
	}
	if strings.HasPrefix(src[j:], "0x") || strings.HasPrefix(src[j:], "0X") || strings.HasPrefix(src[j:], "0o") || strings.HasPrefix(src[j:], "0O") || strings.HasPrefix(src[j:], "0b") || strings.HasPrefix(src[j:], "0B") {
		j += 2
		for j < len(src) && (isHexDigit(src[j]) || src[j] == '_') {
			j++
		}
		return j, false
	}
	for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '_') {
		j++
	}
	if j+1 < len(src) && src[j] == '.' && src[j+1] >= '0' && src[j+1] <= '9' {
		float = true
		j++
		for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '_') {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && src[k] >= '0' && src[k] <= '9' {
			float = true
			j = k
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
		}
	}
	return j, float
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// lexString reads a quoted string at src[i] and decodes it as Jinja2 does
// (the text between the quotes through Python's "unicode-escape" codec:
// \x5f, \u005f, \U0000005f, \N{LOW LINE}, octal \137, \n and the rest; an
// unknown escape keeps its backslash). It returns the value and the offset
// after the closing quote (the end of the template when there is none).
func lexString(src string, i int) (string, int) {
	q := src[i]
	j := i + 1
	for j < len(src) && src[j] != q {
		if src[j] == '\\' {
			j++
		}
		j++
	}
	raw := src[i+1 : min(j, len(src))]
	return pyUnescape(raw), min(j+1, len(src))
}

// pyUnescape decodes Python's string escapes.
func pyUnescape(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n < len(s)+0 && i+1+n <= len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil && utf8.ValidRune(rune(v)) {
					b.WriteRune(rune(v))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		case 'N':
			if i+1 < len(s) && s[i+1] == '{' {
				if k := strings.IndexByte(s[i:], '}'); k > 0 {
					if r, ok := unicodeNames[strings.ToUpper(s[i+2:i+k])]; ok {
						b.WriteRune(r)
						i += k
						continue
					}
				}
			}
			b.WriteString(`\N`)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			k := i
			for k < len(s) && k < i+3 && s[k] >= '0' && s[k] <= '7' {
				k++
			}
			v, _ := strconv.ParseUint(s[i:k], 8, 32)
			b.WriteRune(rune(v))
			i = k - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}

// unicodeNames are the \N{...} names of the characters that spell Python
// internals (underscore, dot, brackets, letters are spelled as themselves).
var unicodeNames = map[string]rune{
	"LOW LINE": '_', "FULL STOP": '.', "LEFT SQUARE BRACKET": '[', "RIGHT SQUARE BRACKET": ']',
	"LEFT PARENTHESIS": '(', "RIGHT PARENTHESIS": ')', "APOSTROPHE": '\'', "QUOTATION MARK": '"',
	"SPACE": ' ', "SOLIDUS": '/', "REVERSE SOLIDUS": '\\',
}

// ---------------------------------------------------------------- AST

type jnodeKind uint8

const (
	jnName    jnodeKind = iota // Name
	jnConst                    // Str (string), Num (number text), or true/false/none
	jnGetattr                  // X.Name
	jnGetitem                  // X[Args[0]]
	jnSlice                    // X[Args[0]:Args[1]:Args[2]] (nil parts allowed)
	jnCall                     // X(Args, Kwargs)
	jnFilter                   // X|Name(Args, Kwargs); X nil in {% filter %}
	jnTest                     // X is Name(Args)
	jnBinary                   // X Op Y
	jnUnary                    // Op X
	jnCond                     // X if Args[0] else Y
	jnList                     // [Args]
	jnTuple                    // (Args)
	jnDict                     // {Args[0]: Args[1], ...}
	jnHole                     // what a {% filter %} or {% set x | f %} block filters: its body
)

type jnode struct {
	kind   jnodeKind
	name   string // name, attribute, filter, test, operator
	str    string // a string constant's value
	isStr  bool
	num    string // a number constant's text
	x, y   *jnode
	args   []*jnode
	kwargs []jkwarg
	off    int
}

type jkwarg struct {
	name string
	val  *jnode
}

// jstmt is a statement tag's header: its keyword and what it holds.
type jstmt struct {
	keyword string
	targets []*jnode // assignment or loop targets (Names, or Getattr for ns.x)
	exprs   []*jnode // the expressions it evaluates
	params  []jkwarg // macro parameters (val: the default, or nil)
	name    string   // macro name
	off     int
	block   bool // {% set x %}…{% endset %}, {% set x | f %}…
}

// ---------------------------------------------------------------- parser

type jparser struct {
	toks  []jtok
	i     int
	depth int
	err   string
}

const jinjaMaxDepth = 200

func (p *jparser) peek() jtok {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return jtok{kind: jtEOF, off: -1}
}

func (p *jparser) next() jtok {
	t := p.peek()
	if p.i < len(p.toks) {
		p.i++
	}
	return t
}

func (p *jparser) isOp(v string) bool {
	t := p.peek()
	return t.kind == jtOp && t.val == v
}

func (p *jparser) isName(v string) bool {
	t := p.peek()
	return t.kind == jtName && t.val == v
}

func (p *jparser) accept(v string) bool {
	if p.isOp(v) {
		p.i++
		return true
	}
	return false
}

func (p *jparser) fail(msg string) *jnode {
	if p.err == "" {
		t := p.peek()
		if t.kind == jtEOF {
			p.err = msg + " at the end of the tag"
		} else {
			p.err = msg + " at " + strconv.Quote(t.val)
		}
	}
	p.i = len(p.toks)
	return &jnode{kind: jnConst, off: -1}
}

func (p *jparser) expect(v string) {
	if !p.accept(v) {
		p.fail("expected " + strconv.Quote(v))
	}
}

// parseTuple parses expressions separated by commas (a tuple when there is
// a comma), as Jinja2's parse_tuple.
func (p *jparser) parseTuple(simplified bool) *jnode {
	off := p.peek().off
	var items []*jnode
	comma := false
	for {
		if len(items) > 0 {
			if !p.accept(",") {
				break
			}
			comma = true
		}
		if p.tupleEnd() {
			break
		}
		if simplified {
			items = append(items, p.parsePrimaryPostfix())
		} else {
			items = append(items, p.parseExpr())
		}
	}
	if len(items) == 1 && !comma {
		return items[0]
	}
	return &jnode{kind: jnTuple, args: items, off: off}
}

func (p *jparser) tupleEnd() bool {
	t := p.peek()
	if t.kind == jtEOF {
		return true
	}
	if t.kind == jtOp && (t.val == ")" || t.val == "]" || t.val == "}" || t.val == "=" || t.val == ":") {
		return true
	}
	return t.kind == jtName && (t.val == "in" || t.val == "recursive" || t.val == "if")
}

func (p *jparser) parseExpr() *jnode {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > jinjaMaxDepth {
		return p.fail("expression nested too deep")
	}
	x := p.parseOr()
	for p.isName("if") {
		off := p.next().off
		cond := p.parseOr()
		var y *jnode
		if p.isName("else") {
			p.next()
			y = p.parseExpr()
		}
		x = &jnode{kind: jnCond, x: x, y: y, args: []*jnode{cond}, off: off}
	}
	return x
}

func (p *jparser) parseOr() *jnode {
	x := p.parseAnd()
	for p.isName("or") {
		off := p.next().off
		x = &jnode{kind: jnBinary, name: "or", x: x, y: p.parseAnd(), off: off}
	}
	return x
}

func (p *jparser) parseAnd() *jnode {
	x := p.parseNot()
	for p.isName("and") {
		off := p.next().off
		x = &jnode{kind: jnBinary, name: "and", x: x, y: p.parseNot(), off: off}
	}
	return x
}

func (p *jparser) parseNot() *jnode {
	if p.isName("not") {
		off := p.next().off
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > jinjaMaxDepth {
			return p.fail("expression nested too deep")
		}
		return &jnode{kind: jnUnary, name: "not", x: p.parseNot(), off: off}
	}
	return p.parseCompare()
}

func (p *jparser) parseCompare() *jnode {
	x := p.parseMath1()
	for {
		t := p.peek()
		switch {
		case t.kind == jtOp && (t.val == "==" || t.val == "!=" || t.val == ">" || t.val == ">=" || t.val == "<" || t.val == "<="):
			p.next()
			x = &jnode{kind: jnBinary, name: t.val, x: x, y: p.parseMath1(), off: t.off}
		case t.kind == jtName && t.val == "in":
			p.next()
			x = &jnode{kind: jnBinary, name: "in", x: x, y: p.parseMath1(), off: t.off}
		case t.kind == jtName && t.val == "not" && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == jtName && p.toks[p.i+1].val == "in":
			p.i += 2
			x = &jnode{kind: jnBinary, name: "not in", x: x, y: p.parseMath1(), off: t.off}
		default:
			return x
		}
	}
}

func (p *jparser) parseMath1() *jnode {
	x := p.parseConcat()
	for p.isOp("+") || p.isOp("-") {
		t := p.next()
		x = &jnode{kind: jnBinary, name: t.val, x: x, y: p.parseConcat(), off: t.off}
	}
	return x
}

func (p *jparser) parseConcat() *jnode {
	x := p.parseMath2()
	for p.isOp("~") {
		t := p.next()
		x = &jnode{kind: jnBinary, name: "~", x: x, y: p.parseMath2(), off: t.off}
	}
	return x
}

func (p *jparser) parseMath2() *jnode {
	x := p.parsePow()
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		t := p.next()
		x = &jnode{kind: jnBinary, name: t.val, x: x, y: p.parsePow(), off: t.off}
	}
	return x
}

func (p *jparser) parsePow() *jnode {
	x := p.parseUnary(true)
	for p.isOp("**") {
		t := p.next()
		x = &jnode{kind: jnBinary, name: "**", x: x, y: p.parseUnary(true), off: t.off}
	}
	return x
}

func (p *jparser) parseUnary(withFilter bool) *jnode {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > jinjaMaxDepth {
		return p.fail("expression nested too deep")
	}
	var x *jnode
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		x = &jnode{kind: jnUnary, name: t.val, x: p.parseUnary(false), off: t.off}
	} else {
		x = p.parsePrimaryPostfix()
	}
	if withFilter {
		x = p.parseFilterExpr(x)
	}
	return x
}

func (p *jparser) parsePrimaryPostfix() *jnode {
	return p.parsePostfix(p.parsePrimary())
}

func (p *jparser) parsePrimary() *jnode {
	t := p.next()
	switch t.kind {
	case jtName:
		switch t.val {
		case "true", "false", "none", "True", "False", "None":
			return &jnode{kind: jnConst, name: strings.ToLower(t.val), off: t.off}
		}
		return &jnode{kind: jnName, name: t.val, off: t.off}
	case jtString:
		s := t.val
		for p.peek().kind == jtString { // adjacent literals join
			s += p.next().val
		}
		return &jnode{kind: jnConst, str: s, isStr: true, off: t.off}
	case jtInt, jtFloat:
		return &jnode{kind: jnConst, num: t.val, off: t.off}
	case jtOp:
		switch t.val {
		case "(":
			if p.accept(")") {
				return &jnode{kind: jnTuple, off: t.off}
			}
			x := p.parseTuple(false)
			p.expect(")")
			return x
		case "[":
			n := &jnode{kind: jnList, off: t.off}
			for !p.isOp("]") && p.peek().kind != jtEOF {
				if len(n.args) > 0 {
					p.expect(",")
					if p.isOp("]") {
						break
					}
				}
				n.args = append(n.args, p.parseExpr())
			}
			p.expect("]")
			return n
		case "{":
			n := &jnode{kind: jnDict, off: t.off}
			for !p.isOp("}") && p.peek().kind != jtEOF {
				if len(n.args) > 0 {
					p.expect(",")
					if p.isOp("}") {
						break
					}
				}
				k := p.parseExpr()
				p.expect(":")
				n.args = append(n.args, k, p.parseExpr())
			}
			p.expect("}")
			return n
		}
	}
	p.i-- // let fail name the token
	if p.i < 0 {
		p.i = 0
	}
	return p.fail("unexpected token")
}

func (p *jparser) parsePostfix(x *jnode) *jnode {
	for {
		switch {
		case p.isOp("."):
			t := p.next()
			a := p.next()
			switch a.kind {
			case jtName:
				x = &jnode{kind: jnGetattr, name: a.val, x: x, off: a.off}
			case jtInt:
				x = &jnode{kind: jnGetitem, x: x, args: []*jnode{{kind: jnConst, num: a.val, off: a.off}}, off: a.off}
			default:
				return p.fail("expected an attribute name after " + strconv.Quote(t.val))
			}
		case p.isOp("["):
			t := p.next()
			x = p.parseSubscript(x, t.off)
			p.expect("]")
		case p.isOp("("):
			x = p.parseCall(x)
		default:
			return x
		}
	}
}

func (p *jparser) parseSubscript(x *jnode, off int) *jnode {
	var parts [3]*jnode
	k := 0
	slice := false
	for !p.isOp("]") && p.peek().kind != jtEOF {
		if p.accept(":") {
			slice = true
			k++
			if k > 2 {
				p.fail("bad slice")
				break
			}
			continue
		}
		if p.isOp(",") { // a[1, 2]: a tuple key
			p.next()
			continue
		}
		parts[k] = p.parseExpr()
	}
	if slice {
		return &jnode{kind: jnSlice, x: x, args: parts[:], off: off}
	}
	return &jnode{kind: jnGetitem, x: x, args: []*jnode{parts[0]}, off: off}
}

// parseArgs parses (args, name=kwargs, *args, **kwargs) after its "(".
func (p *jparser) parseArgs() ([]*jnode, []jkwarg) {
	var args []*jnode
	var kwargs []jkwarg
	for !p.isOp(")") && p.peek().kind != jtEOF {
		if len(args)+len(kwargs) > 0 {
			p.expect(",")
			if p.isOp(")") {
				break
			}
		}
		if p.accept("*") || p.accept("**") {
			args = append(args, p.parseExpr())
			continue
		}
		if t := p.peek(); t.kind == jtName && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == jtOp && p.toks[p.i+1].val == "=" {
			p.i += 2
			kwargs = append(kwargs, jkwarg{name: t.val, val: p.parseExpr()})
			continue
		}
		args = append(args, p.parseExpr())
	}
	p.expect(")")
	return args, kwargs
}

func (p *jparser) parseCall(x *jnode) *jnode {
	t := p.next()
	args, kwargs := p.parseArgs()
	return &jnode{kind: jnCall, x: x, args: args, kwargs: kwargs, off: t.off}
}

func (p *jparser) parseFilterExpr(x *jnode) *jnode {
	for {
		switch {
		case p.isOp("|"):
			x = p.parseFilter(x)
		case p.isName("is"):
			t := p.next()
			neg := false
			if p.isName("not") {
				p.next()
				neg = true
			}
			n := p.next()
			if n.kind != jtName {
				return p.fail("expected a test name")
			}
			name := n.val
			for p.isOp(".") {
				p.next()
				name += "." + p.next().val
			}
			tn := &jnode{kind: jnTest, name: name, x: x, off: t.off}
			if p.isOp("(") {
				p.next()
				tn.args, tn.kwargs = p.parseArgs()
			} else if u := p.peek(); u.kind == jtString || u.kind == jtInt || u.kind == jtFloat || u.kind == jtName && u.val != "else" && u.val != "or" && u.val != "and" && u.val != "if" && u.val != "in" && u.val != "is" && u.val != "not" || u.kind == jtOp && (u.val == "[" || u.val == "{" || u.val == "(" || u.val == "-") {
				tn.args = []*jnode{p.parsePrimaryPostfix()}
			}
			x = tn
			if neg {
				x = &jnode{kind: jnUnary, name: "not", x: x, off: t.off}
			}
		case p.isOp("("):
			x = p.parseCall(x)
		default:
			return x
		}
	}
}

// parseFilter parses |name(.name)*(args) applied to x.
func (p *jparser) parseFilter(x *jnode) *jnode {
	for p.accept("|") {
		n := p.next()
		if n.kind != jtName {
			return p.fail("expected a filter name")
		}
		name := n.val
		for p.isOp(".") {
			p.next()
			name += "." + p.next().val
		}
		f := &jnode{kind: jnFilter, name: name, x: x, off: n.off}
		if p.isOp("(") {
			p.next()
			f.args, f.kwargs = p.parseArgs()
		}
		x = f
	}
	return x
}

// parseStmt parses a {% %} tag's header.
func parseStmt(toks []jtok) (*jstmt, string) {
	p := &jparser{toks: toks}
	st := &jstmt{}
	if len(toks) == 0 {
		return st, ""
	}
	kw := p.next()
	st.keyword, st.off = kw.val, kw.off
	if kw.kind != jtName {
		return st, "a statement that does not start with a keyword"
	}
	switch kw.val {
	case "for":
		st.targets = append(st.targets, p.parseTuple(true))
		if !p.isName("in") {
			p.fail(`expected "in"`)
			break
		}
		p.next()
		st.exprs = append(st.exprs, p.parseTuple(false))
		if p.isName("if") {
			p.next()
			st.exprs = append(st.exprs, p.parseExpr())
		}
		if p.isName("recursive") {
			p.next()
		}
	case "if", "elif", "do", "print":
		st.exprs = append(st.exprs, p.parseTuple(false))
	case "set":
		t := p.parseTuple(true)
		st.targets = append(st.targets, t)
		if p.accept("=") {
			st.exprs = append(st.exprs, p.parseTuple(false))
		} else {
			st.block = true
			if p.isOp("|") {
				st.exprs = append(st.exprs, p.parseFilter(&jnode{kind: jnHole, off: kw.off}))
			}
		}
	case "with":
		for p.peek().kind != jtEOF {
			if len(st.targets) > 0 {
				p.expect(",")
			}
			st.targets = append(st.targets, p.parsePrimary())
			p.expect("=")
			st.exprs = append(st.exprs, p.parseExpr())
		}
	case "macro", "call":
		var args []*jnode
		var kwargs []jkwarg
		if kw.val == "call" && p.isOp("(") {
			p.next()
			args, kwargs = p.parseArgs()
		}
		if kw.val == "macro" {
			n := p.next()
			st.name = n.val
			if p.accept("(") {
				args, kwargs = p.parseArgs()
			}
		} else {
			st.exprs = append(st.exprs, p.parseExpr())
		}
		for _, a := range args {
			if a.kind == jnName {
				st.params = append(st.params, jkwarg{name: a.name})
			}
		}
		st.params = append(st.params, kwargs...)
	case "filter":
		// {% filter upper|trim %}: read as the filter chain "|upper|trim".
		p.i--
		p.toks = append([]jtok(nil), p.toks...)
		p.toks[p.i] = jtok{kind: jtOp, val: "|", off: kw.off}
		st.exprs = append(st.exprs, p.parseFilter(&jnode{kind: jnHole, off: kw.off}))
	case "include", "extends", "import", "from":
		st.exprs = append(st.exprs, p.parseExpr())
		p.i = len(p.toks) // "as x", "import a, b", "with context", "ignore missing"
	case "autoescape", "block", "trans", "pluralize":
		if p.peek().kind != jtEOF {
			st.exprs = append(st.exprs, p.parseExpr())
		}
	case "endfor", "endif", "else", "endset", "endmacro", "endcall", "endfilter", "endwith", "endblock",
		"endautoescape", "break", "continue", "generation", "endgeneration", "raw", "endraw", "endtrans":
		p.i = len(p.toks)
	default:
		return st, "an unknown statement " + strconv.Quote(kw.val)
	}
	if p.err == "" && p.i < len(p.toks) {
		p.fail("unexpected token")
	}
	return st, p.err
}

// parseOutput parses a {{ }} tag.
func parseOutput(toks []jtok) (*jnode, string) {
	p := &jparser{toks: toks}
	if len(toks) == 0 {
		return nil, ""
	}
	x := p.parseTuple(false)
	if p.err == "" && p.i < len(p.toks) {
		p.fail("unexpected token")
	}
	return x, p.err
}
