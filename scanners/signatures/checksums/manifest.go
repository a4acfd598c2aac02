// Package checksums reads checksum manifests (GNU and BSD sha256sum/sha512sum
// output, *.sha256 sidecars) and git-LFS pointer files, and verifies them
// against files read only through an fs.FS (an os.Root's), never following a
// name out of it, hashing in parallel.
//
// It is written by hand because no Go library parses coreutils' manifest
// format with its escaping rules, and verifying must never follow a name out
// of the directory the manifest describes (GNU sha256sum -c does).
package checksums

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Algorithms this package hashes, by name, with their hex digest length.
var hexLen = map[string]int{"sha256": 64, "sha512": 128, "sha384": 96, "sha1": 40}

// Entry is one line of a manifest: a file name and its expected digest.
type Entry struct {
	// Name is the file name as written in the manifest, unescaped.
	Name string
	// Algorithm is "sha256", "sha512", ...
	Algorithm string
	// Digest is the expected digest in lower-case hex.
	Digest string
	// Line is the 1-based line of the manifest (0 for --expect-digest).
	Line int
}

// LineError is a manifest line that could not be read.
type LineError struct {
	Line int
	Msg  string
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// MaxLine bounds one manifest line; longer lines are errors.
const MaxLine = 64 << 10

// AlgorithmFor guesses a manifest's algorithm from its file name
// (SHA256SUMS, sha512sum.txt, model.bin.sha256, ...). It returns "" when the
// name says nothing.
func AlgorithmFor(name string) string {
	n := strings.ToLower(path.Base(name))
	for _, a := range []string{"sha512", "sha384", "sha256", "sha1"} {
		if strings.Contains(n, a) {
			return a
		}
	}
	return ""
}

// IsManifestName reports whether name is a checksum manifest or sidecar by
// its name: SHA256SUMS, SHA512SUMS, *.sha256, *.sha512, sha256sum.txt, ...
func IsManifestName(name string) bool {
	n := strings.ToLower(path.Base(name))
	for _, a := range []string{"sha256", "sha512"} {
		switch {
		case n == a+"sums", n == a+"sums.txt", n == a+"sum.txt", n == a+"sum",
			strings.HasSuffix(n, "."+a), strings.HasSuffix(n, "."+a+"sum"), strings.HasSuffix(n, "."+a+"sums"):
			return true
		}
	}
	return false
}

// SidecarTarget returns the file a sidecar such as "w.bin.sha256" describes
// ("w.bin"), or "" when name is not a sidecar.
func SidecarTarget(name string) string {
	for _, a := range []string{".sha256", ".sha512"} {
		if strings.HasSuffix(strings.ToLower(name), a) && len(name) > len(a) {
			return name[:len(name)-len(a)]
		}
	}
	return ""
}

// Parse reads a manifest in GNU (`HEX  NAME`, `HEX *NAME`, escaped `\HEX  NAME`)
// or BSD (`SHA256 (NAME) = HEX`) form, mixed as coreutils accepts them, with
// LF or CRLF endings. algo is the algorithm of GNU lines ("" guesses it from
// the digest length). name is the manifest's own path: when it is a sidecar
// ("w.bin.sha256") a bare digest line names the file it sits beside.
// Blank lines and lines starting with '#' are skipped; other unreadable
// lines are returned as errors.
func Parse(name string, data []byte, algo string) ([]Entry, []LineError) {
	var entries []Entry
	var errs []LineError
	sidecar := SidecarTarget(path.Base(name))
	n := 0
	for len(data) > 0 {
		n++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		if len(line) > MaxLine {
			errs = append(errs, LineError{n, "line too long"})
			continue
		}
		e, err := parseLine(string(line), algo, sidecar)
		if err != nil {
			errs = append(errs, LineError{n, err.Error()})
			continue
		}
		e.Line = n
		entries = append(entries, e)
	}
	return entries, errs
}

func parseLine(line, algo, sidecar string) (Entry, error) {
	escaped := false
	if strings.HasPrefix(line, `\`) {
		escaped, line = true, line[1:]
	}
	// BSD: ALGO (NAME) = HEX, the name ending at the last ") = ".
	if i := strings.Index(line, " ("); i > 0 && isAlgoWord(line[:i]) {
		rest := line[i+2:]
		j := strings.LastIndex(rest, ") = ")
		if j < 0 {
			return Entry{}, errors.New("BSD line without ') = '")
		}
		a := strings.ToLower(strings.ReplaceAll(line[:i], "-", ""))
		nm, hx := rest[:j], strings.ToLower(strings.TrimSpace(rest[j+4:]))
		return finish(nm, a, hx, escaped)
	}
	hx, rest, ok := strings.Cut(line, " ")
	if !ok {
		// A bare digest in a sidecar.
		if sidecar != "" && !escaped {
			return finish(sidecar, algo, strings.ToLower(strings.TrimSpace(line)), false)
		}
		return Entry{}, errors.New("no file name after the digest")
	}
	// Text mode "HEX  NAME", binary mode "HEX *NAME", BSD -r "HEX NAME".
	switch {
	case strings.HasPrefix(rest, " "), strings.HasPrefix(rest, "*"):
		rest = rest[1:]
	}
	hx = strings.ToLower(hx)
	a := algo
	if a == "" {
		for k, l := range hexLen {
			if l == len(hx) {
				a = k
			}
		}
	}
	return finish(rest, a, hx, escaped)
}

func isAlgoWord(s string) bool {
	switch strings.ToUpper(strings.ReplaceAll(s, "-", "")) {
	case "SHA256", "SHA512", "SHA384", "SHA1":
		return true
	}
	return false
}

func finish(name, algo, hx string, escaped bool) (Entry, error) {
	l, ok := hexLen[algo]
	if !ok {
		return Entry{}, fmt.Errorf("unknown algorithm for a %d-character digest", len(hx))
	}
	if len(hx) != l || !isHex(hx) {
		return Entry{}, fmt.Errorf("not a %s digest (want %d hex characters)", algo, l)
	}
	if escaped {
		var err error
		if name, err = unescape(name); err != nil {
			return Entry{}, err
		}
	}
	if name == "" {
		return Entry{}, errors.New("empty file name")
	}
	return Entry{Name: name, Algorithm: algo, Digest: hx}, nil
}

// unescape undoes coreutils' escaping of '\\', '\n' and '\r' in names
// (src/digest.c filename_unescape); any other escape makes the line invalid.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i == len(s) {
			return "", errors.New("name ends in a lone backslash")
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		default:
			return "", fmt.Errorf("invalid escape \\%c in name", s[i])
		}
	}
	return b.String(), nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return len(s) > 0
}

// ParseDigest reads "sha256:HEX" (the form of --expect-digest and OCI).
func ParseDigest(s string) (algo, hx string, err error) {
	algo, hx, ok := strings.Cut(strings.TrimSpace(s), ":")
	algo, hx = strings.ToLower(algo), strings.ToLower(hx)
	if !ok || hexLen[algo] == 0 || len(hx) != hexLen[algo] || !isHex(hx) {
		return "", "", fmt.Errorf("digest %q is not ALGORITHM:HEX (for example sha256: and 64 hex characters)", s)
	}
	return algo, hx, nil
}
