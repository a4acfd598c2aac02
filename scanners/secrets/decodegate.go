package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
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
// for a fragment, mayDecode finds the segments gitleaks would find — what
// its regexp would match, found without it (its patterns never span a
// line, except unicode's "U+hhhh\n", for which the gate gives up) — and
// tries gitleaks' decoding rules on them. Only fragments where a
// segment may decode go to the decoding detector; the rest go to a plain
// one. gitleaks has no hook for this (its decoder is internal), hence this
// copy of its rules; TestDecodeGateMatchesGitleaks pins the pattern to the
// vendored gitleaks version and compares both detectors' findings.

// encodingsPattern is gitleaks' codec.encodingsRe (v8.30.0), in its order:
// at one position the first alternative that matches wins. mayDecode
// finds what it matches without running it; the tests run it as the
// oracle.
const encodingsPattern = `(?P<percent>%[0-9A-Fa-f]{2}(?:.*%[0-9A-Fa-f]{2})?)` +
	`|(?P<unicode>(?:(?:U\+[a-fA-F0-9]{4}(?:\s|$))+|(?i)(?:\\{1,2}u[a-fA-F0-9]{4})+))` +
	`|(?P<hex>[0-9A-Fa-f]{32,})` +
	`|(?P<base64>[\w\/+-]{16,}={0,2})`

// mayDecode reports whether gitleaks' decoding pass could find a segment in
// raw that decodes to text. False means a detector without decoding finds
// exactly what the decoding one would.
//
// It finds the segments encodingsPattern would, in one pass over the bytes
// and without the regexp (which ran at about 5 MB/s in Go's NFA and was a
// third of the check's CPU on plain text): a percent escape or a unicode
// escape anywhere is a match (no hex or base64 segment can hold one), and
// "U+hhhh" gives up (its pattern may span lines); the rest are runs of
// [\w/+-] bytes, which the regexp cuts as segmentsOf does.
// TestMayDecodeMatchesRegexp compares it with the regexp on every line.
func mayDecode(raw string) bool {
	found := false
	decodeSites(raw, func(int) bool { found = true; return false })
	return found
}

// decodeSites calls site with the place of each segment of raw that may
// decode, until it returns false; with -1 when the gate gives up (a
// "U+hhhh", whose pattern may span lines): then any place may decode.
// Places are in no order; each lies on the line of its segment.
func decodeSites(raw string, site func(at int) bool) {
	if escapesAt(raw, "U+", 4, site, true) {
		return
	}
	// Percent and unicode escapes: assume they decode.
	if escapesAt(raw, "%", 2, site, false) || escapesAt(raw, `\u`, 4, site, false) || escapesAt(raw, `\U`, 4, site, false) {
		return
	}
	// Only runs of 16 bytes or more can decode, so the search probes the
	// 16th byte from i: when it is not a run byte, no such run starts in
	// the 16 places up to it, and the search jumps past it (most runs in
	// code are words shorter than that; a byte-by-byte walk over the runs
	// was a tenth of the check's time). Else the run that holds it is
	// taken whole, from its start (never before i: raw[i-1] is not a run
	// byte) to its end.
	n := len(raw)
	for i := 0; i+16 <= n; {
		p := i + 15
		if !b64Set[raw[p]] {
			i = p + 1
			continue
		}
		s := p
		for s > i && b64Set[raw[s-1]] {
			s--
		}
		j := p + 1
		for j < n && b64Set[raw[j]] {
			j++
		}
		if j-s >= 16 && runDecodes(raw[s:j], raw[j:]) && !site(s) {
			return
		}
		i = j + 1 // raw[j] is not a run byte (or j == n)
	}
}

// escapesAt calls site for each place of lead followed by n hex digits in
// s (with -1 instead when giveUp), and reports whether site asked to stop.
func escapesAt(s, lead string, n int, site func(int) bool, giveUp bool) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], lead)
		if i < 0 {
			return false
		}
		if isHexAt(s, off+i+len(lead), n) {
			at := off + i
			if giveUp {
				at = -1
			}
			if !site(at) || giveUp {
				return true
			}
		}
		off += i + 1
	}
}

// runDecodes reports whether a segment encodingsPattern finds in run, a
// maximal run of [\w/+-] bytes followed by rest, decodes to text. At each
// position the regexp tries hex ([0-9A-Fa-f]{32,}) before base64
// ([\w/+-]{16,}={0,2}), and a match is greedy: from a position, 32 or more
// hex digits are a hex segment up to the last of them; else 16 or more run
// bytes are a base64 segment to the run's end, with up to two '=' after
// it; else nothing matches from there to the run's end (a later position
// has fewer bytes left).
func runDecodes(run, rest string) bool {
	for p := 0; p < len(run); {
		h := p
		for h < len(run) && isHex(run[h]) {
			h++
		}
		if h-p >= 32 {
			if hexDecodes(run[p:h]) {
				return true
			}
			p = h
			continue
		}
		if len(run)-p < 16 {
			return false
		}
		pad := 0
		for pad < 2 && pad < len(rest) && rest[pad] == '=' {
			pad++
		}
		return base64Decodes(run[p:] + rest[:pad])
	}
	return false
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
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
	for k := i; k < i+n; k++ {
		if !isHex(s[k]) {
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
