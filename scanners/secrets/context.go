package secrets

import (
	"bytes"
	"path"
	"strings"
	"unicode"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// Reading a generic match in its context.
//
// gitleaks' generic rule takes any word with "key", "token", "auth" … in it,
// then any of = : , > and a value, for an assignment. In source code that
// reads an import list (from transformers import T5Tokenizer,
// T5ForConditionalGeneration: "token" inside Tokenizer, "," taken for "="),
// a comparison (key.dtype == torch.bfloat16) or keyword arguments
// (pad_token=tokenizer.pad, max_sequences_per_bin=4) as a secret. A value
// written in code, outside any string literal and comment, is an expression —
// a name, an attribute, a call's argument — never a literal credential; a
// credential in code is a string. So a generic match in a programming
// language's file is dropped when its value sits in code (not in a string or
// a comment on its line) and reads as code: an import line, a comparison, a
// comma-separated argument, a keyword argument, a dotted attribute path or a
// name made of words. Values in strings and comments, and every value in
// .env, YAML, shell and other config files, are judged as before.

// codePlace is where a position on a line of code is.
type codePlace int

const (
	inCode codePlace = iota
	inString
	inComment
)

// placeOnLine reads line up to pos as C-like or Python-like code: quotes
// (", ', `) open and close strings, a backslash escapes inside them, and #
// or // outside a string starts a comment.
func placeOnLine(line string, pos int, hashComments bool) codePlace {
	var quote byte
	for i := 0; i < pos && i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '#' && hashComments:
			return inComment
		case c == '/' && i+1 < len(line) && line[i+1] == '/':
			return inComment
		}
	}
	if quote != 0 {
		return inString
	}
	return inCode
}

// hashCommentExts are the code languages where # starts a comment.
var hashCommentExts = map[string]bool{".py": true, ".pyi": true, ".ipynb": true, ".rb": true, ".jl": true, ".r": true}

// secretOnLine returns the line of a finding that holds its secret, and the
// secret's offset in it. ok is false when the secret is not found as written
// (a finding made after decoding).
func secretOnLine(g engine.Finding) (line string, pos int, ok bool) {
	text := g.Line
	m := strings.Index(text, g.Match)
	if m < 0 {
		return "", 0, false
	}
	s := strings.Index(g.Match, g.Secret)
	if s < 0 {
		return "", 0, false
	}
	at := m + s
	start := strings.LastIndexByte(text[:at], '\n') + 1
	end := len(text)
	if i := strings.IndexByte(text[at:], '\n'); i >= 0 {
		end = at + i
	}
	return text[start:end], at - start, true
}

// importRe matches import lines: Python (from x import a, b; import a, b),
// JavaScript and TypeScript (import {a, b} from "x"), Go, Java, Kotlin,
// Scala, Rust (use a::{b, c}).
var importRe = lazyregexp.New(`^\s*(?:from\s+[\w.]+\s+import\b|import\s+[\w.{*]|import\s*\(|use\s+[\w:]+|\}\s*from\s+['"])`)

// codeExpression reports whether a generic match in a programming
// language's file is code, not a literal: see the comment at the top.
func codeExpression(p string, g engine.Finding) bool {
	ext := strings.ToLower(path.Ext(scanners.Base(p)))
	if !codeExts[ext] {
		return false
	}
	line, pos, ok := secretOnLine(g)
	if !ok {
		return false
	}
	if placeOnLine(line, pos, hashCommentExts[ext]) != inCode {
		return false // a string literal or a comment: judged as any value
	}
	if importRe.MatchString(line) {
		return true
	}
	secret := strings.TrimSpace(g.Secret)
	op := operatorBefore(line[:pos])
	switch op {
	case "==", "!=", "<=", ">=", "===", "!==", ",":
		// A comparison with an expression, or an argument or list
		// separator, not an assignment.
		return codeSyntax(secret)
	}
	// A keyword argument taken for the value (max_sequences_per_bin=4), a
	// dotted attribute path (torch.bfloat16), a name made of words
	// (T5ForConditionalGeneration).
	if name, _, ok := strings.Cut(secret, "="); ok && identRe.MatchString(name) {
		return true
	}
	if strings.Contains(secret, ".") && dottedRe.MatchString(secret) {
		for _, part := range strings.Split(secret, ".") {
			if wordy(part) {
				return true
			}
		}
		return false
	}
	return identRe.MatchString(secret) && wordy(secret)
}

var (
	identRe  = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	dottedRe = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$`)
)

// codeSyntax reports whether s is written as code: a name, a dotted path, a
// call's keyword argument or a number.
func codeSyntax(s string) bool {
	if name, _, ok := strings.Cut(s, "="); ok {
		s = name
	}
	return identRe.MatchString(s) || dottedRe.MatchString(s)
}

// operatorBefore returns the operator that ends text (the part of a line
// before a value), without the quotes and spaces around it.
func operatorBefore(text string) string {
	t := strings.TrimRight(text, " \t\"'`")
	i := len(t)
	for i > 0 && strings.IndexByte("=!<>:,|?", t[i-1]) >= 0 {
		i--
	}
	return t[i:]
}

// wordy reports whether a name is made of words, as identifiers are
// (T5ForConditionalGeneration, bfloat16, RegEnumKey, max_sequences_per_bin),
// rather than of random characters: measured on 10^5 random alphanumeric
// strings each, 0.6 % of 26-character and 2.7 % of 16-character ones read as
// wordy (TestWordy); a match must also sit in code to be dropped.
func wordy(s string) bool {
	ws := nameWords(s)
	if len(ws) == 0 {
		return false
	}
	n, long := 0, 0
	for _, w := range ws {
		n += len(w)
		if len(w) >= 3 {
			long += len(w)
		}
	}
	return n >= len(ws)*3 && long*10 >= n*6
}

// nameWords splits a name into its words: lower-case runs, capitalised
// words, acronyms and digit runs; underscores separate.
func nameWords(s string) []string {
	var out []string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		j := i + 1
		switch r := rs[i]; {
		case r == '_':
			i = j
			continue
		case unicode.IsDigit(r):
			for j < len(rs) && unicode.IsDigit(rs[j]) {
				j++
			}
		case unicode.IsLower(r):
			for j < len(rs) && unicode.IsLower(rs[j]) {
				j++
			}
		case unicode.IsUpper(r):
			if j < len(rs) && unicode.IsLower(rs[j]) {
				for j < len(rs) && unicode.IsLower(rs[j]) {
					j++
				}
				break
			}
			for j < len(rs) && unicode.IsUpper(rs[j]) {
				j++
			}
			if j < len(rs) && unicode.IsLower(rs[j]) && j-1 > i {
				j-- // an acronym before a word: its last capital starts the word
			}
		}
		out = append(out, string(rs[i:j]))
		i = j
	}
	return out
}

// around gives the lines near a finding, for judgements that need more than
// its line (an Algolia key is public when the DocSearch config around it
// says so).
type around struct {
	text  []byte
	first int // the line number of text's first line
}

// lines returns the lines line-radius to line+radius of the text.
func (r around) lines(line, radius int) string {
	if r.text == nil {
		return ""
	}
	from, to := line-radius-r.first, line+radius-r.first // 0-based
	var b strings.Builder
	for i, rest := 0, r.text; len(rest) > 0 && i <= to; i++ {
		l := rest
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			l, rest = rest[:j], rest[j+1:]
		} else {
			rest = nil
		}
		if i >= from {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// keyName returns the name a generic match assigns to, lower-cased: the last
// name before its operator (apiKey, restore-keys).
func keyName(g engine.Finding) string {
	line, pos, ok := secretOnLine(g)
	if !ok {
		return ""
	}
	t := strings.TrimRight(line[:pos], " \t\"'`=:,>|?")
	i := len(t)
	for i > 0 && (isNameByte(t[i-1]) || t[i-1] == '-') {
		i--
	}
	return strings.ToLower(t[i:])
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// uuidRe is a UUID.
var uuidRe = lazyregexp.New(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// publicByDesign reports whether a generic match is a value its issuer
// publishes on purpose, or a name that holds no credential:
//
//   - an Algolia search-only key in a DocSearch configuration (apiKey next
//     to appId and indexName): Algolia's DocSearch documentation has it
//     shipped in every page's JavaScript; an admin key never sits there;
//   - the token of a Firebase Storage download URL
//     (firebasestorage.googleapis.com/…?alt=media&token=<uuid>), which
//     Firebase hands out to share one file publicly;
//   - a CI cache key (actions/cache key: and restore-keys:, a key: right
//     under GitLab's cache:, CircleCI's save_cache and restore_cache): a
//     label built from the OS, the tool and a hash of the lock file.
func publicByDesign(p string, g engine.Finding, near around) bool {
	secret := strings.TrimSpace(g.Secret)
	line, _, ok := secretOnLine(g)
	if !ok {
		return false
	}
	l := strings.ToLower(line)
	if uuidRe.MatchString(secret) && strings.Contains(l, "token="+strings.ToLower(secret)) &&
		(strings.Contains(l, "firebasestorage.googleapis.com") || strings.Contains(l, ".firebasestorage.app")) {
		return true
	}
	name := keyName(g)
	switch name {
	case "apikey", "api_key", "searchapikey", "search_api_key", "searchkey", "search_key":
		ctx := strings.ToLower(near.lines(g.StartLine, 8))
		hasApp := strings.Contains(ctx, "appid") || strings.Contains(ctx, "app_id") || strings.Contains(ctx, "applicationid")
		hasIndex := strings.Contains(ctx, "indexname") || strings.Contains(ctx, "index_name") || strings.Contains(ctx, "docsearch")
		return hasApp && hasIndex
	case "restore-keys", "restore_keys":
		return yamlFile(p)
	case "key", "cache-key", "cache_key":
		if !yamlFile(p) {
			return false
		}
		ctx := strings.ToLower(near.lines(g.StartLine, 6))
		for _, w := range []string{"actions/cache", "restore-keys", "save_cache", "restore_cache"} {
			if strings.Contains(ctx, w) {
				return true
			}
		}
		// GitLab CI: cache:\n  key: …
		return strings.TrimSuffix(parentKey(near.lines(g.StartLine-6, 6), line), ":") == "cache"
	}
	return false
}

// parentKey returns, of the YAML lines before (ending with the line above
// line), the nearest one indented less than line, trimmed and without a
// list dash: the key line is under.
func parentKey(before, line string) string {
	indent := len(line) - len(strings.TrimLeft(line, " "))
	ls := strings.Split(strings.TrimRight(before, "\n"), "\n")
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		t := strings.TrimLeft(l, " ")
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(l)-len(t) < indent {
			return strings.TrimSpace(strings.TrimPrefix(t, "- "))
		}
	}
	return ""
}

func yamlFile(p string) bool {
	ext := strings.ToLower(path.Ext(scanners.Base(p)))
	return ext == ".yml" || ext == ".yaml"
}
