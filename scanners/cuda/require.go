package cuda

// NVIDIA_REQUIRE_* as the NVIDIA container toolkit evaluates them in legacy
// mode: the hook collects the variables (nvidia-container-toolkit
// internal/config/image/cuda_image.go) and libnvidia-container's DSL
// (src/cli/dsl.c) evaluates each one per visible GPU. This file ports both
// faithfully, edge cases included, because "would the container start" is
// decided by that code and by nothing else.

import (
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Props are the values a requirement is evaluated against: the driver's and
// one GPU's (a MIG device uses its parent GPU's).
type Props struct {
	CUDA   string // host CUDA driver version, "12.4"
	Driver string // driver version, "550.54.15"
	// Arch and Brand are the GPU's; HasDevice false means no GPU is visible,
	// and then arch and brand factors are true whatever they say, as in
	// libnvidia-container.
	Arch      string
	Brand     string
	HasDevice bool
}

// ReqResult is the outcome of one requirement.
type ReqResult struct {
	// Satisfied is true when the requirement holds.
	Satisfied bool
	// Invalid is true when libnvidia-container rejects the expression
	// ("requirement error: invalid expression"): the container never starts.
	Invalid bool
	// Term is the index of the space-separated alternative that held (-1
	// when none did), and TermText its text.
	Term     int
	TermText string
	// Message is libnvidia-container's error text when not satisfied.
	Message string
}

type comparator int

const (
	opEqual comparator = iota
	opNotEqual
	opLess
	opLessEqual
	opGreater
	opGreaterEqual
)

// operators in libnvidia-container's order; the operator run must equal one.
var operators = []struct {
	str string
	cmp comparator
}{
	{"=", opEqual}, {"!=", opNotEqual}, {"<", opLess}, {"<=", opLessEqual}, {">", opGreater}, {">=", opGreaterEqual},
}

// exprMax is libnvidia-container's EXPR_MAX: a failing factor whose
// formatted text does not fit is reported as an invalid expression.
const exprMax = 128

// dslCompareVersion ports dsl_compare_version: it returns 1 (true), 0
// (false) or -1 (invalid).
func dslCompareVersion(v1 string, cmp comparator, v2 string) int {
	if !onlyDigitsDots(v1) || !onlyDigitsDots(v2) {
		return -1
	}
	for v1 != "" && v2 != "" {
		n1, rest1, ok1 := strtoumax(v1)
		n2, rest2, ok2 := strtoumax(v2)
		if !ok1 || !ok2 {
			return -1
		}
		if n1 != n2 {
			switch cmp {
			case opEqual:
				return 0
			case opNotEqual:
				return 1
			case opLess, opLessEqual:
				return b2i(n1 < n2)
			default:
				return b2i(n1 > n2)
			}
		}
		v1 = strings.TrimLeft(rest1, ".")
		v2 = strings.TrimLeft(rest2, ".")
	}
	v1 = strings.TrimLeft(v1, ".0")
	v2 = strings.TrimLeft(v2, ".0")
	switch cmp {
	case opNotEqual:
		return b2i(v1 != "" || v2 != "")
	case opEqual, opLessEqual, opGreaterEqual:
		if v1 == "" && v2 == "" {
			return 1
		}
		if cmp == opEqual {
			return 0
		}
	}
	switch cmp {
	case opLess, opLessEqual:
		return b2i(v1 == "" && v2 != "")
	default:
		return b2i(v1 != "" && v2 == "")
	}
}

// strtoumax reads the leading digits of s as strtoumax does; ok is false when
// there are none or the value is UINTMAX_MAX or more (both invalid in the DSL).
func strtoumax(s string) (n uint64, rest string, ok bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil || n == ^uint64(0) {
		return 0, s, false
	}
	return n, s[i:], true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CompareVersions compares two dotted numeric versions exactly as
// libnvidia-container does: components as unsigned integers (535.104.05 ==
// 535.104.5), runs of dots as one separator, missing or all-zero trailing
// components equal to none (12 == 12.0), and any other extra component
// greater (535.104.05 > 535.104). It returns -1, 0 or +1; ok is false when
// the DSL would call either side invalid.
//
// Written by hand: no Go version library has these semantics (semver
// rejects leading zeros and more than three components).
func CompareVersions(a, b string) (cmp int, ok bool) {
	switch {
	case dslCompareVersion(a, opLess, b) < 0:
		return 0, false
	case dslCompareVersion(a, opLess, b) == 1:
		return -1, true
	case dslCompareVersion(a, opEqual, b) == 1:
		return 0, true
	}
	return 1, true
}

// evalFactor ports evaluate_rule: 1 true, 0 false, -1 invalid.
func evalFactor(expr string, p Props) int {
	n := strings.IndexAny(expr, "<>=!")
	if n <= 0 {
		return -1 // no name, or no operator
	}
	name, rest := expr[:n], expr[n:]
	m := 0
	for m < len(rest) && strings.IndexByte("<>=!", rest[m]) >= 0 {
		m++
	}
	opText, val := rest[:m], rest[m:]
	found := false
	var op comparator
	for _, o := range operators {
		if o.str == opText {
			op, found = o.cmp, true
			break
		}
	}
	if !found || val == "" {
		return -1
	}
	var ret int
	switch strings.ToLower(name) {
	case "cuda":
		ret = dslCompareVersion(p.CUDA, op, val)
	case "driver":
		ret = dslCompareVersion(p.Driver, op, val)
	case "arch":
		if !p.HasDevice {
			return 1 // no visible device: assume the arch is fine
		}
		ret = dslCompareVersion(p.Arch, op, val)
	case "brand":
		if !p.HasDevice {
			return 1
		}
		switch op {
		case opEqual:
			ret = b2i(strings.EqualFold(p.Brand, val))
		case opNotEqual:
			ret = b2i(!strings.EqualFold(p.Brand, val))
		default:
			ret = -1
		}
	default:
		return -1
	}
	if ret == 0 && len(name)+1+len(opText)+1+len(val) >= exprMax {
		return -1 // the error text does not fit EXPR_MAX
	}
	return ret
}

// EvaluateRequirement evaluates one requirement string (the value of one
// NVIDIA_REQUIRE_* variable) as libnvidia-container's dsl_evaluate does:
// space-separated alternatives (only ' ' separates; empty ones are skipped)
// of comma-separated factors (empty ones skipped), left to right, each
// alternative abandoned at its first false factor and the whole stopping at
// the first alternative that holds. A factor that cannot be parsed makes the
// whole expression invalid, but only when evaluation reaches it.
func EvaluateRequirement(expr string, p Props) ReqResult {
	ret := 1
	term := -1
	termText := ""
	terms := strings.Split(expr, " ")
	for i, or := range terms {
		if or == "" {
			continue
		}
		exhausted := true
		for _, and := range strings.Split(or, ",") {
			if and == "" {
				continue
			}
			ret = evalFactor(and, p)
			if ret < 0 {
				return ReqResult{Invalid: true, Term: -1, Message: "requirement error: invalid expression"}
			}
			if ret == 0 {
				exhausted = false
				break
			}
		}
		if exhausted {
			term, termText = i, or
			break
		}
	}
	if ret == 0 {
		first, _, _ := strings.Cut(expr, " ")
		msg := "unsatisfied condition: " + first
		if strings.HasPrefix(first, "cuda>=") {
			msg += ", please update your driver to a newer version, or use an earlier cuda container"
		}
		return ReqResult{Term: -1, Message: "requirement error: " + msg}
	}
	return ReqResult{Satisfied: true, Term: term, TermText: termText}
}

// ImageEnv is what an image's environment says to the container toolkit.
type ImageEnv struct {
	// Requirements are the NVIDIA_REQUIRE_* values (JETPACK excluded) in
	// name order, each with its variable name; with a legacy image, the
	// synthesised "cuda>=X.Y".
	Requirements []Requirement
	// Disabled is true when NVIDIA_DISABLE_REQUIRE parses as true.
	Disabled bool
	// CUDAVersion is CUDA_VERSION as set.
	CUDAVersion string
	// Legacy is true for an image with CUDA_VERSION and no (or an empty)
	// NVIDIA_REQUIRE_CUDA.
	Legacy bool
	// LegacyInvalid is set when CUDA_VERSION cannot be read as a version by
	// the toolkit (the hook then fails and the container does not start).
	LegacyInvalid string

	raw map[string]string
}

// Requirement is one requirement string and where it came from.
type Requirement struct {
	Var  string // NVIDIA_REQUIRE_CUDA, or CUDA_VERSION when synthesised
	Expr string
}

// ParseImageEnv reads the toolkit-relevant variables from an environment
// ("KEY=VALUE" entries; a later entry wins as in an OCI config).
func ParseImageEnv(env []string) ImageEnv {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		vars[k] = v
	}
	return imageEnvFromMap(vars)
}

func imageEnvFromMap(vars map[string]string) ImageEnv {
	e := ImageEnv{raw: vars}
	e.CUDAVersion = vars["CUDA_VERSION"]
	if b, err := strconv.ParseBool(vars["NVIDIA_DISABLE_REQUIRE"]); err == nil && b {
		e.Disabled = true
	}
	e.Legacy = vars["CUDA_VERSION"] != "" && vars["NVIDIA_REQUIRE_CUDA"] == ""
	names := make([]string, 0, len(vars))
	for k := range vars {
		if strings.HasPrefix(k, "NVIDIA_REQUIRE_") && !strings.HasPrefix(k, "NVIDIA_REQUIRE_JETPACK") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		e.Requirements = append(e.Requirements, Requirement{Var: k, Expr: vars[k]})
	}
	if e.Legacy {
		mm, ok := legacyMajorMinor(e.CUDAVersion)
		if !ok {
			e.LegacyInvalid = e.CUDAVersion
		} else {
			e.Requirements = append(e.Requirements, Requirement{Var: "CUDA_VERSION", Expr: "cuda>=" + mm})
		}
	}
	return e
}

// legacyMajorMinor reads CUDA_VERSION as the toolkit (v1.17-v1.20) does:
// golang.org/x/mod/semver on "v"+version, cut to major.minor.
func legacyMajorMinor(v string) (string, bool) {
	sv := "v" + v
	if !semver.IsValid(sv) {
		return "", false
	}
	mm := strings.TrimPrefix(semver.MajorMinor(sv), "v")
	return mm, true
}
