package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// The decode gate.
//
// gitleaks' detector runs its rules over a fragment, then looks for encoded
// segments (percent, unicode escapes, hex, base64) with one combined regexp
// and, when some decode to printable text, runs the rules again over the
// decoded text. That regexp runs over every byte of every fragment in Go's
// NFA: profiled, it was 81% of the check's CPU time on ordinary text (about
// 5 MB/s), although in source code almost no segment decodes to anything.
//
// When no segment of a fragment decodes, the decoding pass adds nothing:
// the detector's output is exactly that of a detector without decoding. So
// for a fragment, mayDecode finds the segments gitleaks would find — the
// same regexp, run only on the lines that can hold a match (its patterns
// never span a line, except unicode's "U+hhhh\n", for which the gate gives
// up) — and tries gitleaks' decoding rules on them. Only fragments where a
// segment may decode go to the decoding detector; the rest go to a plain
// one. gitleaks has no hook for this (its decoder is internal), hence this
// copy of its rules; TestDecodeGateMatchesGitleaks pins the pattern to the
// vendored gitleaks version and compares both detectors' findings.

// encodingsPattern is gitleaks' codec.encodingsRe (v8.30.0), in its order:
// at one position the first alternative that matches wins.
const encodingsPattern = `(?P<percent>%[0-9A-Fa-f]{2}(?:.*%[0-9A-Fa-f]{2})?)` +
	`|(?P<unicode>(?:(?:U\+[a-fA-F0-9]{4}(?:\s|$))+|(?i)(?:\\{1,2}u[a-fA-F0-9]{4})+))` +
	`|(?P<hex>[0-9A-Fa-f]{32,})` +
	`|(?P<base64>[\w\/+-]{16,}={0,2})`

var encodingsRe = lazyregexp.New(encodingsPattern)

// gateMinFragment is the fragment size below which the gate is not worth
// its cost (and the plain detector not worth building): a job script.
const gateMinFragment = 4 << 10

// mayDecode reports whether gitleaks' decoding pass could find a segment in
// raw that decodes to text. False means a detector without decoding finds
// exactly what the decoding one would.
func mayDecode(raw string) bool {
	for len(raw) > 0 {
		line := raw
		if i := strings.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = ""
		}
		switch lineCandidate(line) {
		case candNone:
			continue
		case candGiveUp:
			return true
		}
		m := encodingsRe.FindAllStringSubmatchIndex(line, -1)
		for _, idx := range m {
			// Groups 1..4: percent, unicode, hex, base64.
			switch {
			case idx[2] >= 0, idx[4] >= 0:
				return true // percent and unicode escapes: assume they decode
			case idx[6] >= 0:
				if hexDecodes(line[idx[6]:idx[7]]) {
					return true
				}
			case idx[8] >= 0:
				if base64Decodes(line[idx[8]:idx[9]]) {
					return true
				}
			}
		}
	}
	return false
}

type candidate int

const (
	candNone   candidate = iota // no alternative can match on this line
	candMaybe                   // run the regexp on this line
	candGiveUp                  // "U+hhhh": a match may span lines
)

// lineCandidate tells cheaply whether the encodings regexp can match in
// line: base64 and hex need a run of 16 [\w/+-] bytes (hex's 32 hex digits
// are such a run), percent a '%' and two hex digits, unicode escapes a
// backslash, 'u' and four hex digits, or "U+" and four.
func lineCandidate(line string) candidate {
	run := 0
	c := candNone
	for i := 0; i < len(line); i++ {
		b := line[i]
		if b64Set[b] {
			run++
			if run >= 16 {
				c = candMaybe
			}
		} else {
			run = 0
		}
		switch b {
		case '%':
			if isHexAt(line, i+1, 2) {
				c = candMaybe
			}
		case '\\':
			if i+1 < len(line) && (line[i+1] == 'u' || line[i+1] == 'U') && isHexAt(line, i+2, 4) {
				c = candMaybe
			}
		case '+':
			if i > 0 && line[i-1] == 'U' && isHexAt(line, i+1, 4) {
				return candGiveUp
			}
		}
	}
	return c
}

var b64Set = func() (t [256]bool) {
	for _, r := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_/+-" {
		t[r] = true
	}
	return t
}()

func isHexAt(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for _, b := range []byte(s[i : i+n]) {
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F') {
			return false
		}
	}
	return true
}

// printable is gitleaks' printable ASCII: tab through '~'.
func printable(b []byte) bool {
	for _, c := range b {
		if c <= '\x08' || c >= '\x7f' {
			return false
		}
	}
	return true
}

// hexDecodes is whether gitleaks' decodeHex returns text: an even length,
// a decimal digit somewhere, and printable bytes.
func hexDecodes(s string) bool {
	if len(s)%2 != 0 || !strings.ContainsAny(s, "0123456789") {
		return false
	}
	b, err := hex.DecodeString(s)
	return err == nil && printable(b)
}

// base64Decodes is whether gitleaks' decodeBase64 returns text: one of
// "0-9+/-_" somewhere, then standard or raw URL base64 that decodes to
// printable bytes.
func base64Decodes(s string) bool {
	if !strings.ContainsAny(s, "0123456789+/-_") {
		return false
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && printable(b) {
		return true
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && printable(b)
}
