package secrets

import (
	"bytes"
	"strconv"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// normalize rewrites text so that gitleaks' rules read credentials the way
// they are written in JSON, notebooks and code, keeping every line break
// (the lines of findings do not move; offsets within a line may):
//
//   - JSON escapes are decoded: "\/" is "/" (a Slack webhook serialised as
//     https:\/\/hooks.slack.com\/services\/…), and "\u00XX" of a printable
//     ASCII character is that character;
//   - string literals joined with "+" on one line are one literal
//     ("sk-proj-" + "…" is "sk-proj-…"), so that a key split to dodge a
//     scanner is whole again;
//   - a string subscript assigned to, os.environ["COHERE_API_KEY"] = "…",
//     reads as COHERE_API_KEY = "…": gitleaks' rules expect the name, then
//     an operator, and `"]` between them matched nothing (Cohere, Mistral,
//     W&B keys set in notebooks this way were missed);
//   - escaped quotes end tokens: gitleaks' default rules end a token only at
//     a quote, space or ';', so a token inside a JSON or shell string
//     written as \"…\" would be missed; `\"` becomes ` "`.
func normalize(text []byte) []byte {
	if bytes.Contains(text, []byte(`\/`)) || bytes.Contains(text, []byte(`\u00`)) {
		text = unescapeJSON(text)
	}
	if hasConcat(text) {
		text = concatRe.ReplaceAllFunc(text, func(m []byte) []byte {
			sub := concatRe.FindSubmatch(m)
			if !bytes.Equal(sub[1], sub[2]) {
				return m // "a" + 'b': not one literal's quotes
			}
			return nil
		})
	}
	if bytes.Contains(text, []byte(`"]`)) || bytes.Contains(text, []byte(`']`)) || bytes.Contains(text, []byte(`" ]`)) {
		text = subscriptRe.ReplaceAllFunc(text, func(m []byte) []byte {
			sub := subscriptRe.FindSubmatch(m)
			return append(append(append([]byte(" "), sub[1]...), " ="...), sub[2]...)
		})
	}
	if !bytes.Contains(text, []byte(`\"`)) && !bytes.Contains(text, []byte(`\'`)) {
		return text
	}
	out := bytes.ReplaceAll(text, []byte(`\"`), []byte(` "`))
	return bytes.ReplaceAll(out, []byte(`\'`), []byte(` '`))
}

var (
	// concatRe is the end of one string literal, "+" and the start of the
	// next, on one line (an escaped quote too, for code inside JSON).
	concatRe = lazyregexp.New(`\\?(["'])[ \t]*\+[ \t]*\\?(["'])`)
	// subscriptRe is a string subscript that is assigned to, not compared:
	// ["NAME"] = (an escaped or spaced quote too).
	subscriptRe = lazyregexp.New(`\[[ \t]*\\?["'][ \t]*([A-Za-z_][A-Za-z0-9_.-]{0,100})[ \t]*\\?["'][ \t]*\][ \t]*=([^=]|$)`)
)

func hasConcat(text []byte) bool {
	for _, p := range []string{`" +`, `"+`, `' +`, `'+`} {
		if bytes.Contains(text, []byte(p)) {
			return true
		}
	}
	return false
}

// unescapeJSON decodes "\/" and "\u00XX" escapes of printable ASCII.
func unescapeJSON(text []byte) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '\\' || i+1 >= len(text) {
			out = append(out, c)
			continue
		}
		switch n := text[i+1]; {
		case n == '/':
			out = append(out, '/')
			i++
		case n == '\\':
			out = append(out, c, n) // an escaped backslash: "\\/" stays
			i++
		case n == 'u' && i+5 < len(text) && text[i+2] == '0' && text[i+3] == '0':
			v, err := strconv.ParseUint(string(text[i+4:i+6]), 16, 8)
			if err == nil && v >= 0x20 && v < 0x7f {
				out = append(out, byte(v))
				i += 5
				continue
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
