package rules

// The cuda check's table: CUDA toolkit <-> NVIDIA driver, minor-version and
// forward compatibility, compute capabilities.

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CUDAFile is the name of the CUDA table inside a rules fs.FS.
const CUDAFile = "cuda.yaml"

//go:embed cuda.yaml
var cudaFS embed.FS

// CUDAFS returns the built-in CUDA table (CUDAFile) as an fs.FS.
func CUDAFS() fs.FS { return cudaFS }

// CUDATable is the parsed cuda.yaml.
type CUDATable struct {
	Version int `yaml:"version"`
	// Toolkits lists every toolkit release with the driver it needs, newest
	// first after loading.
	Toolkits    []CUDAToolkit     `yaml:"toolkits"`
	MinorCompat []CUDAMinorCompat `yaml:"minor_compat"`
	Branches    []CUDABranch      `yaml:"branches"`
	Arch        []CUDAArch        `yaml:"arch"`
	Forward     CUDAForwardCompat `yaml:"forward_compat"`
}

// CUDAToolkit is one toolkit release and its toolkit driver version.
type CUDAToolkit struct {
	CUDA string `yaml:"cuda"` // full version, e.g. "12.4.1"
	// Linux and Windows are the minimum driver versions; empty when NVIDIA
	// gives none (Windows from 13.0). A bare branch ("615") is a floor of
	// that branch.
	Linux   string `yaml:"linux"`
	Windows string `yaml:"windows"`
	Source  string `yaml:"source"`
}

// CUDAMinorCompat is the minimum driver for minor-version compatibility of
// one CUDA major family.
type CUDAMinorCompat struct {
	Major   int    `yaml:"major"`
	Linux   string `yaml:"linux"`
	Windows string `yaml:"windows"`
	Source  string `yaml:"source"`
}

// CUDABranch maps a driver branch to the CUDA version it reports.
type CUDABranch struct {
	Branch int    `yaml:"branch"`
	CUDA   string `yaml:"cuda"`
	Source string `yaml:"source"`
}

// CUDAArch lists the compute capabilities a toolkit release can target.
type CUDAArch struct {
	CUDA    string   `yaml:"cuda"` // major.minor
	MinCC   string   `yaml:"min_cc"`
	Added   []string `yaml:"added"`
	Dropped []string `yaml:"dropped"`
	Source  string   `yaml:"source"`
}

// CUDAForwardCompat describes the cuda-compat package rules.
type CUDAForwardCompat struct {
	OS       []string            `yaml:"os"`
	Brands   []string            `yaml:"brands"`
	Source   string              `yaml:"source"`
	Packages []CUDACompatPackage `yaml:"packages"`
}

// CUDACompatPackage is one compat package whose supported host branches are
// known.
type CUDACompatPackage struct {
	CUDA     string `yaml:"cuda"`
	Driver   string `yaml:"driver"`
	Branches []int  `yaml:"branches"`
	Source   string `yaml:"source"`
}

// DefaultCUDA returns the built-in table.
func DefaultCUDA() (*CUDATable, error) { return LoadCUDA(cudaFS) }

// LoadCUDA reads CUDAFile from fsys (CUDAFS() for the built-in table).
func LoadCUDA(fsys fs.FS) (*CUDATable, error) {
	b, err := fs.ReadFile(fsys, CUDAFile)
	if err != nil {
		return nil, fmt.Errorf("read cuda rules: %w", err)
	}
	t, err := ParseCUDA(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CUDAFile, err)
	}
	return t, nil
}

// ParseCUDA parses and validates a CUDA table. Every row must name its
// source and every version must be numeric.
func ParseCUDA(data []byte) (*CUDATable, error) {
	var t CUDATable
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("parse cuda rules: %w", err)
	}
	if t.Version != 1 {
		return nil, fmt.Errorf("cuda rules: unsupported version %d (want 1)", t.Version)
	}
	if len(t.Toolkits) == 0 || len(t.MinorCompat) == 0 || len(t.Branches) == 0 {
		return nil, fmt.Errorf("cuda rules: toolkits, minor_compat and branches must not be empty")
	}
	check := func(what, v string, optional bool) error {
		if v == "" && optional {
			return nil
		}
		if !cudaIsVersion(v) {
			return fmt.Errorf("cuda rules: %s: %q is not a version", what, v)
		}
		return nil
	}
	src := func(what, s string) error {
		if !strings.HasPrefix(s, "https://") {
			return fmt.Errorf("cuda rules: %s: source must be an https URL, got %q", what, s)
		}
		return nil
	}
	for _, r := range t.Toolkits {
		what := "toolkit " + r.CUDA
		if err := cmp.Or(check(what, r.CUDA, false), check(what+" linux", r.Linux, true),
			check(what+" windows", r.Windows, true), src(what, r.Source)); err != nil {
			return nil, err
		}
	}
	for _, r := range t.MinorCompat {
		what := "minor_compat " + strconv.Itoa(r.Major)
		if err := cmp.Or(check(what+" linux", r.Linux, false), check(what+" windows", r.Windows, true), src(what, r.Source)); err != nil {
			return nil, err
		}
	}
	for _, r := range t.Branches {
		what := "branch " + strconv.Itoa(r.Branch)
		if err := cmp.Or(check(what, r.CUDA, false), src(what, r.Source)); err != nil {
			return nil, err
		}
	}
	for _, r := range t.Arch {
		what := "arch " + r.CUDA
		if err := cmp.Or(check(what, r.CUDA, false), check(what+" min_cc", r.MinCC, false), src(what, r.Source)); err != nil {
			return nil, err
		}
		for _, cc := range slices.Concat(r.Added, r.Dropped) {
			if err := check(what, cc, false); err != nil {
				return nil, err
			}
		}
	}
	if len(t.Forward.Brands) > 0 || len(t.Forward.Packages) > 0 {
		if err := src("forward_compat", t.Forward.Source); err != nil {
			return nil, err
		}
	}
	for _, p := range t.Forward.Packages {
		what := "forward_compat package " + p.CUDA
		if err := cmp.Or(check(what, p.CUDA, false), check(what+" driver", p.Driver, false), src(what, p.Source)); err != nil {
			return nil, err
		}
	}
	for i := range t.Forward.Brands {
		t.Forward.Brands[i] = strings.ToLower(t.Forward.Brands[i])
	}
	// Newest first, so lookups find the latest matching row.
	slices.SortStableFunc(t.Toolkits, func(a, b CUDAToolkit) int { return -cudaCompare(a.CUDA, b.CUDA) })
	slices.SortStableFunc(t.Branches, func(a, b CUDABranch) int { return cmp.Compare(a.Branch, b.Branch) })
	slices.SortStableFunc(t.Arch, func(a, b CUDAArch) int { return cudaCompare(a.CUDA, b.CUDA) })
	return &t, nil
}

func cudaIsVersion(s string) bool {
	if s == "" {
		return false
	}
	for _, p := range strings.Split(s, ".") {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// cudaCompare compares dotted numeric versions (validated beforehand).
func cudaCompare(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y uint64
		if i < len(as) {
			x, _ = strconv.ParseUint(as[i], 10, 64)
		}
		if i < len(bs) {
			y, _ = strconv.ParseUint(bs[i], 10, 64)
		}
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	return 0
}
