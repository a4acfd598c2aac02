package secrets

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
)

// Values written over several lines (issue 37, item 2).
//
// A credential split to fit a line, or to dodge a scanner, is one value to
// the language that reads it, and only whole is it a match:
//
//   - string literals side by side across lines, which Python and C join
//     inside parentheses ("sk-proj-…"⏎"…"), or joined by a "+" at the end
//     of the first line or the start of the next (JavaScript, TypeScript,
//     Python): the pieces become one literal;
//   - a word continued by a backslash at the end of its line (shell, and
//     Python's explicit line joining): the backslash and line break go;
//   - a parenthesised value that starts on the line after its name
//     (API_KEY = (⏎"…"⏎"…"⏎)): the "(" and the value's indentation go;
//   - a YAML block scalar (key: >- or key: |, the value on the lines
//     below): the indicator goes and the value's first line (for a folded
//     scalar, its lines folded with single spaces, as YAML reads them)
//     stands on the line after the key, unindented, so that the rules' "key:
//     value" reads across the one line break (findings go to the line of
//     their secret: atSecretLine).
//
// Every line break is kept: the breaks removed inside a joined value are
// put back at the end of its last line, so the value is reported at its
// first line and the lines after it keep their numbers. joinLines looks at
// each line's last bytes and the next line's first ones only (one
// IndexByte pass over the fragment); it copies the text only where it
// joins.
func joinLines(text []byte) []byte {
	var out []byte
	copied := 0 // text[:copied] is in out (or unchanged, with out nil)
	for i := 0; i < len(text); {
		var e int
		if i, e = nextJoinEnd(text, i); e < 0 {
			break
		}
		var cuts [][2]int
		var last int // the end of the chain's last line (its '\n', or len(text))
		var add []byte
		switch {
		case continuedWord(text, i, e):
			cuts, last = wordChain(text, i, e)
		case endsInQuote(text, i, e):
			cuts, last = literalChain(text, i, e)
		case blockScalar(text, i, e):
			cuts, add, last = scalarJoin(text, i, e)
		case parenValue(text, i, e):
			cuts, last = parenJoin(text, i, e)
		}
		if len(cuts) == 0 {
			i = e + 1
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(text))
		}
		breaks := 0
		for _, c := range cuts {
			out = append(out, text[copied:c[0]]...)
			breaks += bytes.Count(text[c[0]:c[1]], []byte{'\n'})
			copied = c[1]
		}
		out = append(out, text[copied:last]...)
		out = append(out, add...)
		for range breaks {
			out = append(out, '\n')
		}
		copied = last
		i = last + 1
	}
	if out == nil {
		return text
	}
	return append(out, text[copied:]...)
}

// joinEnd marks the bytes a line that may join the next can end with: a
// backslash, a quote (and blanks or a "+" after it), a block scalar's
// indicator (>, |, -, +), a "(", a '\r'.
var joinEnd = func() (t [256]bool) {
	for _, c := range []byte("\\\"'+ \t\r>|-(") {
		t[c] = true
	}
	return t
}()

// nextJoinEnd returns the first line at or after from (a line's start)
// that may join the next (joinEnd: its last byte): its start and its
// '\n', or e = -1. Lines are found eight bytes at a time (a zero byte of
// the word xor "\n\n…"): an IndexByte call per line was a sixth of the
// check's time on config files of short lines. (Ruling lines out by their
// last byte in the same word arithmetic was no faster: in code, most lines
// end in a byte below '0'.)
func nextJoinEnd(text []byte, from int) (start, e int) {
	const lo, hi, nl = 0x0101010101010101, 0x8080808080808080, 0x0a0a0a0a0a0a0a0a
	start = from
	i := from
	for ; i+8 <= len(text); i += 8 {
		x := binary.LittleEndian.Uint64(text[i:]) ^ nl
		for m := (x - lo) &^ x & hi; m != 0; m &= m - 1 {
			if e := i + bits.TrailingZeros64(m)/8; text[e] == '\n' {
				if e > start && mayJoin(text, e) {
					return start, e
				}
				start = e + 1
			}
		}
	}
	for ; i < len(text); i++ {
		if text[i] == '\n' {
			if i > start && mayJoin(text, i) {
				return start, i
			}
			start = i + 1
		}
	}
	return start, -1
}

// mayJoin is the cheap test of the line ending at the '\n' at e.
func mayJoin(text []byte, e int) bool { return joinEnd[text[e-1]] }

// lineEnd is where the content of the line ending at the '\n' at e
// ends: before a '\r'.
func lineEnd(text []byte, start, e int) int {
	if e > start && text[e-1] == '\r' {
		return e - 1
	}
	return e
}

// nextLine returns the bounds of the line after the '\n' at e: its start
// and its '\n' (len(text) for the last line).
func nextLine(text []byte, e int) (start, end int) {
	start = e + 1
	if n := bytes.IndexByte(text[start:], '\n'); n >= 0 {
		return start, start + n
	}
	return start, len(text)
}

// continuedWord reports whether the line [start, e) ends with a backslash
// right after a word's byte and the next line goes on with the word.
func continuedWord(text []byte, start, e int) bool {
	end := lineEnd(text, start, e)
	if end-start < 2 || text[end-1] != '\\' {
		return false
	}
	c := text[end-2]
	if isBlank(c) || c == '\\' || e+1 >= len(text) {
		return false
	}
	n := text[e+1]
	return !isBlank(n) && n != '\n' && n != '\r'
}

// wordChain is the backslash-line-break pairs of a word continued over
// lines from the line [start, e), and the end of the word's last line.
func wordChain(text []byte, start, e int) (cuts [][2]int, last int) {
	for n := 0; n < 64; n++ {
		cuts = append(cuts, [2]int{lineEnd(text, start, e) - 1, e + 1})
		s, ne := nextLine(text, e)
		if ne >= len(text) || !continuedWord(text, s, ne) {
			return cuts, ne
		}
		start, e = s, ne
	}
	return cuts, e
}

// closingQuote returns where the line [start, end) ends with the closing
// quote of a string literal, a "+" and blanks after it allowed, or -1.
func closingQuote(text []byte, start, end int) int {
	j := end - 1
	for j >= start && isBlank(text[j]) {
		j--
	}
	if j >= start && (text[j] == '+' || text[j] == '\\') {
		j--
		for j >= start && isBlank(text[j]) {
			j--
		}
	}
	if j < start+1 || !isQuote(text[j]) || text[j-1] == text[j] {
		return -1 // no quote, or "" / a triple quote's end
	}
	return j
}

// endsInQuote is the cheap first test of literalChain: the line ends with
// a quote and the next one starts (after blanks and a "+") with the same.
func endsInQuote(text []byte, start, e int) bool {
	q := closingQuote(text, start, lineEnd(text, start, e))
	return q >= 0 && openingQuote(text, e, text[q]) >= 0
}

// openingQuote returns where the line after the '\n' at e starts with
// quote q, after blanks and a "+", or -1.
func openingQuote(text []byte, e int, q byte) int {
	j := e + 1
	for j < len(text) && isBlank(text[j]) {
		j++
	}
	if j < len(text) && text[j] == '+' {
		j++
		for j < len(text) && isBlank(text[j]) {
			j++
		}
	}
	if j < len(text) && text[j] == q {
		return j
	}
	return -1
}

// closes returns where the literal opened by quote text[open] closes on
// its line, or -1.
func closes(text []byte, open int) int {
	q := text[open]
	for j := open + 1; j < len(text) && text[j] != '\n'; j++ {
		switch text[j] {
		case '\\':
			j++
		case q:
			return j
		}
	}
	return -1
}

// pieceTail reports whether what follows a continued literal's piece on
// its line, from i, is what ends a piece: blanks, closing brackets, ",",
// ";", "+" or "\\", a comment. (Quoted CSV fields, "a","b", are not
// pieces.)
func pieceTail(text []byte, i int) bool {
	for i < len(text) && isBlank(text[i]) {
		i++
	}
	for i < len(text) && bytes.IndexByte([]byte(")]},;+\\"), text[i]) >= 0 {
		i++
	}
	for i < len(text) && isBlank(text[i]) {
		i++
	}
	return i >= len(text) || text[i] == '\n' || text[i] == '\r' || text[i] == '#' || i+1 < len(text) && text[i] == '/' && text[i+1] == '/'
}

// literalChain is the joints of string literals continued over lines
// from the line [start, e): each joint from a literal's closing quote to
// the next one's opening quote, and the end of the last piece's line.
func literalChain(text []byte, start, e int) (cuts [][2]int, last int) {
	end := lineEnd(text, start, e)
	q := closingQuote(text, start, end)
	if placeOnLine(string(text[start:end]), q-start, false) != inString {
		return nil, 0 // the quote opens a literal (or sits in one of the other quote)
	}
	for n := 0; n < 64; n++ {
		o := openingQuote(text, e, text[q])
		if o < 0 {
			break
		}
		c := closes(text, o)
		if c < 0 || !pieceTail(text, c+1) {
			break
		}
		cuts = append(cuts, [2]int{q, o + 1})
		s, ne := nextLine(text, e)
		last = ne
		nq := closingQuote(text, s, lineEnd(text, s, ne))
		if nq != c || ne >= len(text) {
			break // the piece is not the line's last literal: the chain ends here
		}
		q, e = nq, ne
	}
	return cuts, last
}

// parenValue reports whether the line [start, e) assigns a parenthesised
// value that starts on the next line with a string literal: "KEY = (",
// "key: (" then the literal alone on its line (or the first piece of a
// continued one).
func parenValue(text []byte, start, e int) bool {
	end := lineEnd(text, start, e)
	j := end - 1
	for j >= start && isBlank(text[j]) {
		j--
	}
	if j < start+1 || text[j] != '(' {
		return false
	}
	j--
	for j >= start && isBlank(text[j]) {
		j--
	}
	if j < start || (text[j] != '=' && text[j] != ':') || j > start && strings.IndexByte("=!<>", text[j-1]) >= 0 {
		return false // not an assignment (a call, a comparison)
	}
	s, ne := nextLine(text, e)
	o := s
	for o < ne && isBlank(text[o]) {
		o++
	}
	if o >= ne || !isQuote(text[o]) {
		return false
	}
	c := closes(text, o)
	return c >= 0 && pieceTail(text, c+1)
}

// parenJoin takes the "(" away from a parenthesised value (parenValue) and
// the indentation from its first line, so that the name, the operator and
// the value are one line break apart (findings go to the secret's line),
// and joins the value's pieces if it is continued.
func parenJoin(text []byte, start, e int) (cuts [][2]int, last int) {
	p := lineEnd(text, start, e) - 1
	for text[p] != '(' {
		p--
	}
	s, ne := nextLine(text, e)
	o := s
	for isBlank(text[o]) {
		o++
	}
	cuts = [][2]int{{p, p + 1}, {s, o}}
	last = ne
	if ne < len(text) && endsInQuote(text, s, ne) {
		if more, l := literalChain(text, s, ne); len(more) > 0 {
			cuts, last = append(cuts, more...), l
		}
	}
	return cuts, last
}

// blockScalar reports whether the line [start, e) is a YAML key whose
// value is a block scalar: "key: >", "key: |-", "- key: >+".
func blockScalar(text []byte, start, e int) bool {
	end := lineEnd(text, start, e)
	j := end - 1
	for j >= start && isBlank(text[j]) {
		j--
	}
	if j >= start && (text[j] == '-' || text[j] == '+') {
		j-- // a chomping indicator (indentation indicators are not read)
	}
	if j < start+2 || (text[j] != '>' && text[j] != '|') || !isBlank(text[j-1]) {
		return false
	}
	j--
	for j >= start && isBlank(text[j]) {
		j--
	}
	return j >= start && text[j] == ':'
}

// scalarJoin rewrites a YAML block scalar whose key line is [start, e):
// the indicator goes, the value's first line joins the key's line and,
// folded (>), takes the lines of the same indentation after it, joined by
// single spaces (add), up to an empty or less indented line.
func scalarJoin(text []byte, start, e int) (cuts [][2]int, add []byte, last int) {
	end := lineEnd(text, start, e)
	colon := bytes.LastIndexByte(text[start:end], ':') + start
	ind := start
	for ind < end && (isBlank(text[ind]) || text[ind] == '-') {
		ind++
	}
	keyIndent := ind - start
	folded := bytes.IndexByte(text[colon:end], '>') >= 0
	s, ne := nextLine(text, e)
	c := s
	for c < ne && isBlank(text[c]) {
		c++
	}
	indent := c - s
	if indent <= keyIndent || c >= lineEnd(text, s, ne) {
		return nil, nil, 0 // not the scalar's content
	}
	// The indicator, the line break and the indentation go: the value
	// stands after "key: " on the key's line, as a plain scalar would
	// (rules that read "key: value" and those that allow "key: >" then the
	// value, such as kubernetes-secret-yaml, both read it).
	cuts = append(cuts, [2]int{colon + 2, c})
	last = ne
	if !folded {
		return cuts, nil, last
	}
	from := lineEnd(text, s, ne) // where the next folded line's cut starts
	for n := 0; n < 64 && last < len(text); n++ {
		s2, ne2 := nextLine(text, last)
		c2 := s2
		for c2 < ne2 && isBlank(text[c2]) {
			c2++
		}
		le := lineEnd(text, s2, ne2)
		if c2-s2 != indent || c2 >= le {
			break
		}
		// The line folds into the one before: a space for its break.
		add = append(add, ' ')
		add = append(add, text[c2:le]...)
		cuts = append(cuts, [2]int{from, ne2})
		from, last = ne2, ne2
	}
	return cuts, add, last
}
