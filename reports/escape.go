package reports

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape makes s safe to print on a terminal as one line: every control
// character (C0 including newline and tab, DEL, C1), every byte that is not
// UTF-8, and the Unicode format characters that reorder or hide text
// (bidirectional overrides and isolates, zero-width characters) are written
// as Go escapes (\n, \x1b, \u202e). File names, evidence and messages come
// from what was scanned: printed raw, an ESC or OSC sequence could clear the
// screen, set the window title or forge a summary line.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return !plainUTF8(s[i:])
		}
	}
	return false
}

// plainUTF8 reports whether s (from its first unusual byte) is valid UTF-8
// with no character Escape would change.
func plainUTF8(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 || r == 0x7f || hidden(r) {
			return false
		}
		i += n
	}
	return true
}

// hidden: C1 controls, and format characters that change how the text
// around them is shown (Trojan Source, CVE-2021-42574).
func hidden(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x061c, r == 0xfeff:
		return true
	}
	return false
}
