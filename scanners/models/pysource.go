package models

import (
	"strings"
)

// Python source found inside a model — the argument of an exec() a pickle
// calls, decoded from base64 or hex; a string in safetensors metadata — is
// tokenised (never run) and its imports and calls resolved through its own
// import aliases, then judged with the pickle globals table: "import os as
// o; o.system(...)" is os.system.

type pytok struct {
	kind byte // 'n' name, 's' string, 'o' operator, 'l' newline
	val  string
	line int
	off  int
}

// pyTokens tokenises Python source loosely: names, strings (any prefix,
// triple quotes, escapes decoded unless raw), operators, logical newlines.
// It never fails; it stops after maxTok tokens.
func pyTokens(src string, maxTok int) []pytok {
	var out []pytok
	line := 1
	depth := 0
	for i := 0; i < len(src) && len(out) < maxTok; {
		c := src[i]
		switch {
		case c == '\n':
			line++
			if depth == 0 {
				out = append(out, pytok{kind: 'l', line: line - 1, off: i})
			}
			i++
		case c == ';':
			out = append(out, pytok{kind: 'l', line: line, off: i})
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\\':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9' || src[j] >= 0x80) {
				j++
			}
			word := src[i:j]
			if j < len(src) && (src[j] == '\'' || src[j] == '"') && len(word) <= 2 && strings.Trim(strings.ToLower(word), "rbuf") == "" {
				raw := strings.ContainsAny(word, "rR")
				s, next, nl := pyString(src, j, raw)
				out = append(out, pytok{kind: 's', val: s, line: line, off: i})
				line += nl
				i = next
				continue
			}
			out = append(out, pytok{kind: 'n', val: word, line: line, off: i})
			i = j
		case c == '\'' || c == '"':
			s, next, nl := pyString(src, i, false)
			out = append(out, pytok{kind: 's', val: s, line: line, off: i})
			line += nl
			i = next
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' || src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z') {
				j++
			}
			i = j
		default:
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth = max(0, depth-1)
			}
			out = append(out, pytok{kind: 'o', val: string(c), line: line, off: i})
			i++
		}
	}
	return out
}

// pyString reads a string literal at src[i] (a quote); it returns the
// value, the offset after it and the newlines it spans.
func pyString(src string, i int, raw bool) (string, int, int) {
	q := src[i]
	triple := strings.HasPrefix(src[i:], strings.Repeat(string(q), 3))
	start := i + 1
	if triple {
		start = i + 3
	}
	j := start
	for j < len(src) {
		if src[j] == '\\' {
			j += 2
			continue
		}
		if triple && strings.HasPrefix(src[j:], strings.Repeat(string(q), 3)) || !triple && (src[j] == q || src[j] == '\n') {
			break
		}
		j++
	}
	j = min(j, len(src))
	body := src[start:j]
	end := j + 1
	if triple {
		end = j + 3
	}
	if !raw {
		body = pyUnescape(body)
	}
	return body, min(end, len(src)), strings.Count(src[i:min(end, len(src))], "\n")
}

// srcRef is one import or call a piece of source makes.
type srcRef struct {
	module, name string // resolved: ("os", "system"), ("builtins", "exec"), ("os", "") for "import os"
	call         bool
	line         int
}

// pyBuiltinCalls are builtins whose bare call matters.
var pyBuiltinCalls = map[string]bool{
	"exec": true, "eval": true, "compile": true, "open": true, "__import__": true, "getattr": true,
	"execfile": true, "breakpoint": true, "input": true, "globals": true, "vars": true,
}

// sourceRefs returns the imports and calls of Python source, with the
// string literals it holds (to look inside them).
func sourceRefs(src string) (refs []srcRef, strs []pytok, statements bool) {
	toks := pyTokens(src, 1<<17)
	alias := map[string]string{} // local name → dotted module path
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == 's' {
			strs = append(strs, t)
			continue
		}
		if t.kind != 'n' {
			continue
		}
		lineStart := i == 0 || toks[i-1].kind == 'l'
		switch {
		case t.val == "import" && lineStart:
			statements = true
			for i++; i < len(toks) && toks[i].kind != 'l'; i++ {
				mod, j := dotted(toks, i)
				if mod == "" {
					continue
				}
				local := strings.SplitN(mod, ".", 2)[0]
				alias[local] = local
				i = j
				if i+1 < len(toks) && toks[i].kind == 'n' && toks[i].val == "as" && toks[i+1].kind == 'n' {
					alias[toks[i+1].val] = mod
					i++
				}
				refs = append(refs, srcRef{module: mod, line: t.line})
				if i < len(toks) && toks[i].kind == 'l' {
					break
				}
			}
		case t.val == "from" && lineStart:
			statements = true
			mod, j := dotted(toks, i+1)
			if mod == "" || j >= len(toks) || toks[j].val != "import" {
				continue
			}
			for i = j + 1; i < len(toks) && toks[i].kind != 'l'; i++ {
				if toks[i].kind != 'n' || toks[i].val == "as" {
					continue
				}
				name := toks[i].val
				local := name
				if i+2 < len(toks) && toks[i+1].val == "as" && toks[i+2].kind == 'n' {
					local = toks[i+2].val
					i += 2
				}
				alias[local] = mod + "." + name
				refs = append(refs, srcRef{module: mod, name: name, line: t.line})
			}
		default:
			if i > 0 && toks[i-1].kind == 'o' && toks[i-1].val == "." {
				continue // an attribute, handled with its chain
			}
			chain, j := dotted(toks, i)
			call := j < len(toks) && toks[j].kind == 'o' && toks[j].val == "("
			parts := strings.Split(chain, ".")
			head := parts[0]
			switch {
			case (head == "__import__" || chain == "importlib.import_module") && call && j+1 < len(toks) && toks[j+1].kind == 's' && toks[j+1].val != "":
				// __import__('os').system(...)
				mod := toks[j+1].val
				k := j + 2
				for k < len(toks) && toks[k].val != ")" {
					k++
				}
				rest, k2 := "", k+1
				if k2 < len(toks) && toks[k2].val == "." {
					rest, k2 = dotted(toks, k2+1)
				}
				called := k2 < len(toks) && toks[k2].val == "("
				refs = append(refs, srcRef{module: mod, name: rest, call: called || rest == "", line: t.line})
				statements = true
			case head == "getattr" && call && j+1 < len(toks):
				// getattr(os, 'system')
				obj, k := dotted(toks, j+1)
				if obj != "" && k+1 < len(toks) && toks[k].val == "," && toks[k+1].kind == 's' && toks[k+1].val != "" {
					mod := resolve(alias, obj)
					refs = append(refs, srcRef{module: mod, name: toks[k+1].val, call: true, line: t.line})
					statements = true
				}
			case alias[head] != "":
				full := resolve(alias, chain)
				if i := strings.LastIndexByte(full, '.'); i > 0 {
					refs = append(refs, srcRef{module: full[:i], name: full[i+1:], call: call, line: t.line})
				}
				statements = statements || call
			case len(parts) == 1 && call && pyBuiltinCalls[head]:
				refs = append(refs, srcRef{module: "builtins", name: head, call: true, line: t.line})
				statements = true
			case len(parts) >= 2 && call:
				// os.system(...) without an import seen: the module name as written.
				refs = append(refs, srcRef{module: strings.Join(parts[:len(parts)-1], "."), name: parts[len(parts)-1], call: true, line: t.line})
				statements = true
			}
			i = j - 1
		}
	}
	return refs, strs, statements
}

// dotted reads NAME(.NAME)* at toks[i]; it returns the chain and the index
// after it.
func dotted(toks []pytok, i int) (string, int) {
	if i >= len(toks) || toks[i].kind != 'n' {
		return "", i + 1
	}
	var b strings.Builder
	b.WriteString(toks[i].val)
	i++
	for i+1 < len(toks) && toks[i].kind == 'o' && toks[i].val == "." && toks[i+1].kind == 'n' {
		b.WriteByte('.')
		b.WriteString(toks[i+1].val)
		i += 2
	}
	return b.String(), i
}

func resolve(alias map[string]string, chain string) string {
	head, rest, _ := strings.Cut(chain, ".")
	if m, ok := alias[head]; ok {
		head = m
	}
	if rest == "" {
		return head
	}
	return head + "." + rest
}
