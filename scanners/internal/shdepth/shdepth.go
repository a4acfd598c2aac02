// Package shdepth bounds how deeply a shell script nests before it is handed
// to a recursive parser. mvdan.cc/sh parses nested constructs ($( … ),
// subshells, braces, if/while/case blocks, arithmetic) by recursion, about
// 2–5 KiB of goroutine stack per level, and a stack overflow is a fatal
// error no recover catches: 200,000 nested $( in a 1 MB script kill the
// process. Check is a linear scan that estimates the nesting depth; a
// caller refuses to parse a script over the limit and reports it instead.
package shdepth

// MaxDepth is the deepest nesting parsed (about 5 MiB of stack at most);
// real scripts nest a few levels.
const MaxDepth = 500

// MaxOpens bounds the opening tokens of one script whatever the estimate
// says (quoting tricks that fool the estimate still cannot reach more than
// this depth: about 100 MiB of stack).
const MaxOpens = 20000

// Check estimates src's deepest nesting and counts its opening tokens. ok is
// false when the script nests deeper than MaxDepth or opens more than
// MaxOpens constructs; depth is then the depth or count that was over.
func Check(src []byte) (depth int, ok bool) {
	var stack []byte // kinds: '(' paren, '{' brace, '"' double quote, '`' backquote, 'k' keyword block
	opens, deepest := 0, 0
	push := func(k byte) {
		stack = append(stack, k)
		opens++
		deepest = max(deepest, len(stack))
	}
	top := func() byte {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1]
	}
	pop := func(k byte) {
		if top() == k {
			stack = stack[:len(stack)-1]
		}
	}
	wordStart := true
	for i := 0; i < len(src); i++ {
		c := src[i]
		if deepest > MaxDepth {
			return deepest, false
		}
		if opens > MaxOpens {
			return opens, false
		}
		if top() == '"' {
			switch c {
			case '\\':
				i++
			case '"':
				pop('"')
			case '`':
				push('`')
			case '$':
				if i+1 < len(src) && (src[i+1] == '(' || src[i+1] == '{') {
					push(map[byte]byte{'(': '(', '{': '{'}[src[i+1]])
					i++
				}
			}
			continue
		}
		switch c {
		case '\\':
			i++
			wordStart = false
			continue
		case '\'':
			for i++; i < len(src) && src[i] != '\''; i++ {
			}
			wordStart = false
			continue
		case '#':
			if wordStart {
				for ; i < len(src) && src[i] != '\n'; i++ {
				}
				wordStart = true
				continue
			}
		case '"':
			push('"')
		case '`':
			if top() == '`' {
				pop('`')
			} else {
				push('`')
			}
		case '(':
			push('(')
		case ')':
			pop('(')
		case '{':
			push('{')
		case '}':
			pop('{')
		default:
			if wordStart && isWordByte(c) {
				j := i
				for j < len(src) && isWordByte(src[j]) {
					j++
				}
				switch string(src[i:j]) {
				case "if", "while", "until", "for", "select", "case":
					push('k')
				case "fi", "done", "esac":
					pop('k')
				}
				i = j - 1
				wordStart = false
				continue
			}
		}
		wordStart = c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '{' || c == '}' || c == '`'
	}
	if deepest > MaxDepth {
		return deepest, false
	}
	if opens > MaxOpens {
		return opens, false
	}
	return deepest, true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
