package cuda

import (
	"math"
	"strconv"
	"strings"
)

// parseComponent reads one component as strtoumax would: empty is 0 and an
// overflow saturates.
func parseComponent(s string) uint64 {
	if s == "" {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return math.MaxUint64
	}
	return n
}

func onlyDigitsDots(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}

// isVersion reports whether s is a well-formed version: digits separated by
// single dots ("550.54.15", "12.4", "9.0").
func isVersion(s string) bool {
	if s == "" {
		return false
	}
	for _, p := range strings.Split(s, ".") {
		if p == "" || !onlyDigitsDots(p) {
			return false
		}
	}
	return true
}

// vcmp compares two versions that are known to be well formed.
func vcmp(a, b string) int {
	c, _ := CompareVersions(a, b)
	return c
}

// majorOf returns a version's first component (-1 when there is none).
func majorOf(v string) int {
	m, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(m)
	if err != nil {
		return -1
	}
	return n
}

// majorMinor cuts a version to "major.minor" ("12.4.1" -> "12.4", "12" ->
// "12.0"), numerically ("12.04" -> "12.4"). ok is false when v is not a
// version.
func majorMinor(v string) (string, bool) {
	if !isVersion(v) {
		return "", false
	}
	parts := strings.Split(v, ".")
	maj := parseComponent(parts[0])
	var min uint64
	if len(parts) > 1 {
		min = parseComponent(parts[1])
	}
	if maj == math.MaxUint64 || min == math.MaxUint64 {
		return "", false
	}
	return strconv.FormatUint(maj, 10) + "." + strconv.FormatUint(min, 10), true
}
