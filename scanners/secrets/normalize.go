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
//   - a value written over several lines (literals continued on the next
//     line, a backslash-continued word, a YAML block scalar) is one value
//     again, at its first line (joinLines);
//   - the credential argument of an ML SDK's constructor or login call
//     reads as the provider's variable assigned (sdkContext);
//   - a string subscript assigned to, os.environ["COHERE_API_KEY"] = "…",
//     reads as COHERE_API_KEY = "…": gitleaks' rules expect the name, then
//     an operator, and `"]` between them matched nothing (Cohere, Mistral,
//     W&B keys set in notebooks this way were missed);
//   - escaped quotes end tokens: gitleaks' default rules end a token only at
//     a quote, space or ';', so a token inside a JSON or shell string
//     written as \"…\" would be missed; `\"` becomes ` "`.
func normalize(text []byte) []byte {
	out, _ := joinValues(normalizeText(text))
	return out
}

// joinValues is normalize's passes that read a value in its context: a
// value over several lines (joinlines.go), an SDK call's credential
// (sdkcall.go). changed says text was rewritten. They come last, and the
// windowed detector runs them only on fragments where some rule's literal
// occurs (they join and name what rules read; they make no keyword
// appear where none was).
func joinValues(text []byte) (out []byte, changed bool) {
	out = sdkContext(joinLines(text))
	return out, len(out) != len(text) || len(out) > 0 && &out[0] != &text[0]
}

// normalizeText is normalize's other passes.
func normalizeText(text []byte) []byte {
	if bytes.Contains(text, []byte(`\/`)) || bytes.Contains(text, []byte(`\u00`)) {
		text = unescapeJSON(text)
	}
	if hasConcat(text) {
		text = joinConcat(text)
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
	// subscriptRe is a string subscript that is assigned to, not compared:
	// ["NAME"] = (an escaped or spaced quote too).
	subscriptRe = lazyregexp.New(`\[[ \t]*\\?["'][ \t]*([A-Za-z_][A-Za-z0-9_.-]{0,100})[ \t]*\\?["'][ \t]*\][ \t]*=([^=]|$)`)
)

// joinConcat removes, where one string literal ends and the next starts
// with the same quote, what joins them: the closing quote, "+" and the
// opening quote, on one line, with the spaces and tabs between them and a
// backslash before either quote (code inside JSON). It is what
//
//	regexp.MustCompile(`\\?(["'])[ \t]*\+[ \t]*\\?(["'])`).ReplaceAllFunc
//
// does when it drops the matches whose quotes are the same, by hand: the
// pattern has no literal to start from, so Go's regexp ran over every byte
// of every fragment with a quote and a "+" (most Python), ≈ a tenth of the
// check's CPU on Debian's Python packages. Matches are found as the
// regexp finds them, leftmost first and not overlapping: a match's "+"
// has only its quote, a backslash and blanks before it, so matches start
// in the order of their "+" (TestJoinConcat, FuzzJoinConcat).
func joinConcat(text []byte) []byte {
	var out []byte
	joined := false
	copied, last := 0, 0 // text[:copied] is in out; the last match ended at last
	for from := 0; from < len(text); {
		i := bytes.IndexByte(text[from:], '+')
		if i < 0 {
			break
		}
		p := from + i
		from = p + 1
		q := p - 1 // the closing quote, before the blanks
		for q >= last && isBlank(text[q]) {
			q--
		}
		if q < last || !isQuote(text[q]) {
			continue
		}
		s := q // where the match starts: a backslash before the quote is in it
		if q-1 >= last && text[q-1] == '\\' {
			s = q - 1
		}
		r := p + 1 // the opening quote, after the blanks and a backslash
		for r < len(text) && isBlank(text[r]) {
			r++
		}
		if r < len(text) && text[r] == '\\' {
			r++
		}
		if r >= len(text) || !isQuote(text[r]) {
			continue
		}
		if text[q] == text[r] {
			out = append(out, text[copied:s]...)
			copied, joined = r+1, true
		}
		last, from = r+1, r+1
	}
	if !joined {
		return text
	}
	return append(out, text[copied:]...)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func isQuote(c byte) bool { return c == '"' || c == '\'' }

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
