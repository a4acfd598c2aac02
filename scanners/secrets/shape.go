package secrets

import (
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// Reading a match's value by its shape.
//
// Judged by hand on the working trees of twelve public ML training
// repositories (the issue 16 note), the generic rule's remaining false
// positives were values no issuer hands out as a credential: placeholders
// written as ascending runs (A1b2C3d4E5f6, abcdef123456,
// test-api-key-12345), model names and versions (gpt-4-turbo-browsing,
// qwen3-asr-0.6b), module paths in strings (lin0.road_theta.default, a list
// "query_key_value", "mlp.dense_4h_to_h"), file digests keyed by file name
// (a manifest "truststore/_api.py": "<sha256>") or sitting among other
// digests, and PostHog's public project keys; and one vendor rule took an
// English word for a token (gitleaks' 15-character dropbox-api-token on
// "Dropbox:" and the 15-letter word of a sentence after it). A value under
// a password-like name is never dropped by its shape: a dictionary word or
// a passphrase is a real password.

// notCredential reports whether a match's value, by its shape and the name
// it is assigned to, is not a credential. generic is whether the match is
// the generic rule's.
func notCredential(g engine.Finding, near around, generic bool) bool {
	secret := strings.TrimSpace(g.Secret)
	if g.RuleID != "private-key" && runsUp(secret) {
		// ghp_ABCDEFGHIJKLMNOPQRST0123, hf_1234567890123456789012345678901234,
		// sk_live_abcdef123456: a format's prefix and then the alphabet
		// and the digits, as tests of redaction write them.
		return true
	}
	if specificity(g.RuleID) == 1 {
		return false
	}
	if generic && placeholder(secret) {
		// Even under a password's name: an ascending run is an example
		// value (a tool-call data set's {"password": "A1b2C3d4E5f6"}).
		return true
	}
	if passwordName(keyName(g)) {
		return false
	}
	if englishWord(secret) && inProse(g) {
		return true
	}
	if !generic {
		return false
	}
	switch {
	case modelName(secret), wordyPath(secret):
		return true
	case strings.HasPrefix(secret, "phc_"):
		// PostHog project API keys are written into every page that sends
		// events (PostHog's docs: "safe to expose publicly"); personal
		// keys are phx_.
		return true
	case digestRe.MatchString(secret):
		return fileName(rawKey(g)) || amongDigests(g, near)
	}
	line, pos, ok := secretOnLine(g)
	if ok && operatorBefore(line[:pos]) == "," && strings.Contains(secret, ".") && dottedRe.MatchString(secret) {
		for _, part := range strings.Split(secret, ".") {
			if wordy(part) {
				return true // "query_key_value", "mlp.dense_4h_to_h": a list of module names
			}
		}
	}
	return false
}

// passwordName reports whether a key name says its value is a password or
// a secret, which may be any word.
func passwordName(name string) bool {
	for _, w := range []string{"pass", "pwd", "secret", "credential"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// placeholder reports whether s is written as an example value: its letters
// and its digits each run up the alphabet and the digits (A1b2C3d4E5f6,
// abcdef123456, 0123456789abcdef), or it is words and separators ending in
// an ascending run (test-api-key-12345, your_token_123456).
func placeholder(s string) bool {
	var letters, digits []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			letters = append(letters, c)
		case c >= 'A' && c <= 'Z':
			letters = append(letters, c+'a'-'A')
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case c == '-' || c == '_' || c == '.':
		default:
			return false
		}
	}
	if ascending(letters) && ascending(digits) && len(letters)+len(digits) >= 6 {
		return true
	}
	// Words then an ascending number: every part but the last is wordy.
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' })
	if len(parts) < 2 {
		return false
	}
	last := parts[len(parts)-1]
	if len(last) < 4 || strings.Trim(last, "0123456789") != "" || !ascending([]byte(last)) {
		return false
	}
	for _, w := range parts[:len(parts)-1] {
		if strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			return false
		}
	}
	return true
}

// runsUp reports whether a value, after a format's short prefixes
// (sk_live_, glpat-, hf_), is nothing but ascending runs of three or more
// characters (letters regardless of case, digits with 9 wrapping to 0), at
// least eight in all: QRSTuvWXyz0123456789abcdefGHIJklmn,
// 0123456789abcdef0123456789abcdef01234567. In a random value a character
// follows its predecessor in the alphabet about once in 36.
func runsUp(s string) bool {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' })
	for len(parts) > 1 && len(parts[0]) <= 5 && strings.Trim(parts[0], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
		parts = parts[1:]
	}
	body := strings.ToLower(strings.Join(parts, ""))
	if len(body) < 8 {
		return false
	}
	run := 1
	for i := 1; i <= len(body); i++ {
		if i < len(body) && (body[i] == body[i-1]+1 && (body[i] >= 'a' && body[i] <= 'z' || body[i] >= '0' && body[i] <= '9') || body[i-1] == '9' && body[i] == '0') {
			run++
			continue
		}
		if run < 3 {
			return false
		}
		run = 1
	}
	c := body[0]
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// ascending reports whether every byte of b is the one before it plus one
// (an empty or one-byte run counts; 9 may wrap to 0).
func ascending(b []byte) bool {
	for i := 1; i < len(b); i++ {
		if b[i] != b[i-1]+1 && (b[i-1] != '9' || b[i] != '0') {
			return false
		}
	}
	return true
}

// versionPartRe is a part of a model name that holds digits: a version, a
// size (0.6b, 7b, 4h), a date (0125), a name with its generation (qwen3).
var versionPartRe = lazyregexp.New(`^(?:[0-9]+(?:\.[0-9]+)*[a-z]?|[a-z]{2,}[0-9]+(?:\.[0-9]+)?)$`)

// modelName reports whether s is a hyphenated name of words and versions,
// as model names are (gpt-4-turbo-browsing, qwen3-asr-0.6b,
// llama-3.1-8b-instruct): all lower case, at least two parts, every part a
// word of letters or a short version, and most of its letters in words of
// three or more.
func modelName(s string) bool {
	if s != strings.ToLower(s) {
		return false
	}
	parts := strings.Split(s, "-")
	if len(parts) < 2 {
		return false
	}
	words := 0
	for _, p := range parts {
		switch {
		case p == "":
			return false
		case strings.Trim(p, "abcdefghijklmnopqrstuvwxyz") == "":
			if len(p) >= 3 {
				words++
			}
		case len(p) <= 6 && versionPartRe.MatchString(p):
		default:
			return false
		}
	}
	return words >= 1 && words*2 >= len(parts)-1
}

// wordyPath reports whether s is a dotted path of names, most of them made
// of words (lin0.road_theta.default, model.layers.0.mlp): a module or
// parameter path, not a token (JWTs have the generic rule's exception of
// their own rule, and their parts are long and random).
func wordyPath(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 3 {
		return false
	}
	n := 0
	for _, p := range parts {
		if len(p) > 24 || !identRe.MatchString(p) && strings.Trim(p, "0123456789") != "" {
			return false
		}
		if wordy(p) {
			n++
		}
	}
	return n*2 >= len(parts)
}

// rawKey returns the name a match assigns to as written, with its dots and
// slashes: the last word or quoted string before the operator.
func rawKey(g engine.Finding) string {
	line, pos, ok := secretOnLine(g)
	if !ok {
		return ""
	}
	t := strings.TrimRight(line[:pos], " \t\"'`=:,>|?")
	return t[strings.LastIndexAny(t, " \t\"'`{,(")+1:]
}

// fileName reports whether a key name is a file's path or name
// (truststore/_api.py): a digest under it is the file's.
func fileName(name string) bool {
	return strings.Contains(name, "/") || path.Ext(name) != "" && len(path.Ext(name)) <= 6
}

// amongDigests reports whether a digest sits among at least two other
// digests of its length on the lines around it, none of them under a name
// that says key, token, secret or password: a table of digests (golden
// outputs, lock files), not credentials.
func amongDigests(g engine.Finding, near around) bool {
	secret := strings.TrimSpace(g.Secret)
	others := 0
	for _, l := range strings.Split(near.lines(g.StartLine, 3), "\n") {
		// The first digest of the secret's length on the line.
		var m []int
		for _, c := range hexValueRe.FindAllStringSubmatchIndex(l, -1) {
			if c[3]-c[2] == len(secret) {
				m = c
				break
			}
		}
		if m == nil || strings.Contains(l, secret) {
			continue
		}
		if secretName(strings.ToLower(l[:m[2]])) {
			return false
		}
		others++
	}
	return others >= 2
}

// hexValueRe is a hex value of a digest's length after a quote, an
// operator or a space.
var hexValueRe = lazyregexp.New(`["'=: ]([0-9a-fA-F]{32,128})\b`)

// secretName reports whether the text before a value names a credential.
func secretName(before string) bool {
	for _, w := range []string{"key", "token", "secret", "pass", "auth", "pwd"} {
		if strings.Contains(before, w) {
			return true
		}
	}
	return false
}

// inProse reports whether a match's secret is followed on its line by a
// space and a word: a sentence goes on after it (a product name, a colon,
// and a headline of capitalised words), where a credential in a file ends
// its value.
func inProse(g engine.Finding) bool {
	line, pos, ok := secretOnLine(g)
	if !ok {
		return false
	}
	rest := line[pos+len(strings.TrimSpace(g.Secret)):]
	return len(rest) >= 2 && rest[0] == ' ' && (rest[1] >= 'a' && rest[1] <= 'z' || rest[1] >= 'A' && rest[1] <= 'Z')
}

// englishWord reports whether s reads as one word of prose — letters only,
// lower case or capitalised, vowels in a word's proportion and no run of
// four consonants — rather than random letters. About 8 % of random
// 15-letter lower-case strings read so (TestShapeRates), so a match is
// dropped only when it also sits in prose (inProse).
func englishWord(s string) bool {
	if len(s) < 8 {
		return false
	}
	vowels, run := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 0 && c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c < 'a' || c > 'z' {
			return false
		}
		if strings.IndexByte("aeiouy", c) >= 0 {
			vowels++
			run = 0
			continue
		}
		run++
		if run >= 4 {
			return false
		}
	}
	return vowels*10 >= len(s)*3
}
