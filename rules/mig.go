package rules

// The MIG table: the GPU instance profiles each GPU model offers, how many
// of each fit, and where NVIDIA places them.

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// MIGFile is the name of the MIG table inside a rules fs.FS.
const MIGFile = "mig.yaml"

//go:embed mig.yaml
var migFS embed.FS

// MIGFS returns the built-in MIG table (MIGFile).
func MIGFS() fs.FS { return migFS }

// MIGTable is the parsed mig.yaml.
type MIGTable struct {
	Version int      `yaml:"version"`
	GPUs    []MIGGPU `yaml:"gpus"`
}

// MIGGPU is one GPU model's MIG geometry.
type MIGGPU struct {
	// Model names the model in messages ("A100-80GB").
	Model string `yaml:"model"`
	// Products says which nvidia.com/gpu.product label values are this
	// model: each entry is a list of words that must all appear
	// (case-insensitively) in the label.
	Products [][]string `yaml:"products"`
	// PCIIDs are the device IDs mig-parted's device-filter names
	// ("0x20B010DE": device 0x20B0, vendor 0x10DE).
	PCIIDs []string `yaml:"pci_ids"`
	// MemorySlices and ComputeSlices are the GPU's slices; MaxInstances
	// the most GPU instances at once.
	MemorySlices  int          `yaml:"memory_slices"`
	ComputeSlices int          `yaml:"compute_slices"`
	MaxInstances  int          `yaml:"max_instances"`
	Profiles      []MIGProfile `yaml:"profiles"`
	Source        string       `yaml:"source"`
	// Note says what about the row is not confirmed.
	Note string `yaml:"note,omitempty"`
}

// MIGProfile is one GPU instance profile.
type MIGProfile struct {
	// Name as the device plugin and mig-parted write it: "3g.40gb",
	// "1g.10gb+me".
	Name string `yaml:"name"`
	// Compute is the compute slices it takes; Size the memory slices.
	Compute int `yaml:"compute"`
	Size    int `yaml:"size"`
	// Max is the most instances of it on one GPU.
	Max int `yaml:"max"`
	// Starts are the memory slices an instance may start at.
	Starts []int `yaml:"starts"`
}

// DefaultMIG returns the built-in table.
func DefaultMIG() (*MIGTable, error) { return LoadMIG(migFS) }

// LoadMIG reads MIGFile from fsys.
func LoadMIG(fsys fs.FS) (*MIGTable, error) {
	b, err := fs.ReadFile(fsys, MIGFile)
	if err != nil {
		return nil, fmt.Errorf("read mig rules: %w", err)
	}
	t, err := ParseMIG(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MIGFile, err)
	}
	return t, nil
}

var (
	migProfileName = lazyregexp.New(`^[1-9]g\.[0-9]+gb(\+[a-z]+)?$`)
	pciID          = lazyregexp.New(`^0x[0-9A-F]{8}$`)
)

// ParseMIG parses and validates a MIG table: every model has a source,
// slices, and profiles whose placements lie inside the GPU.
func ParseMIG(data []byte) (*MIGTable, error) {
	var t MIGTable
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("parse mig rules: %w", err)
	}
	if t.Version != 1 {
		return nil, fmt.Errorf("mig rules: unsupported version %d (want 1)", t.Version)
	}
	if len(t.GPUs) == 0 {
		return nil, fmt.Errorf("mig rules: no GPUs")
	}
	for i := range t.GPUs {
		g := &t.GPUs[i]
		if err := g.validate(); err != nil {
			return nil, fmt.Errorf("mig rules: %s: %w", g.Model, err)
		}
	}
	return &t, nil
}

func (g *MIGGPU) validate() error {
	if g.Model == "" {
		return fmt.Errorf("model name is missing")
	}
	if !strings.HasPrefix(g.Source, "https://") {
		return fmt.Errorf("source must be an https URL, got %q", g.Source)
	}
	if g.MemorySlices < 1 || g.MemorySlices > 16 || g.ComputeSlices < 1 || g.ComputeSlices > 16 || g.MaxInstances < 1 {
		return fmt.Errorf("memory_slices, compute_slices (1..16) and max_instances must be set")
	}
	for i, id := range g.PCIIDs {
		g.PCIIDs[i] = "0x" + strings.ToUpper(strings.TrimPrefix(strings.ToLower(id), "0x"))
		if !pciID.MatchString(g.PCIIDs[i]) {
			return fmt.Errorf("pci id %q is not like 0x20B010DE", id)
		}
	}
	seen := map[string]bool{}
	for _, p := range g.Profiles {
		if !migProfileName.MatchString(p.Name) || seen[p.Name] {
			return fmt.Errorf("profile %q: not like 3g.40gb, or listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Compute < 1 || p.Compute > g.ComputeSlices || p.Size < 1 || p.Size > g.MemorySlices || p.Max < 1 || len(p.Starts) == 0 {
			return fmt.Errorf("profile %s: compute, size, max and starts must fit the GPU", p.Name)
		}
		for _, s := range p.Starts {
			if s < 0 || s+p.Size > g.MemorySlices {
				return fmt.Errorf("profile %s: placement at %d does not fit %d memory slices", p.Name, s, g.MemorySlices)
			}
		}
	}
	for _, alt := range g.Products {
		if len(alt) == 0 {
			return fmt.Errorf("an empty products entry")
		}
	}
	return nil
}

// Profile returns the model's profile named name.
func (g *MIGGPU) Profile(name string) (MIGProfile, bool) {
	for _, p := range g.Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return MIGProfile{}, false
}

// IsProduct reports whether an nvidia.com/gpu.product label value names
// this model.
func (g *MIGGPU) IsProduct(label string) bool {
	l := strings.ToLower(label)
	return slices.ContainsFunc(g.Products, func(words []string) bool {
		for _, w := range words {
			if !strings.Contains(l, strings.ToLower(w)) {
				return false
			}
		}
		return true
	})
}

// HasPCIID reports whether id (as mig-parted's device-filter writes it)
// is this model's.
func (g *MIGGPU) HasPCIID(id string) bool {
	id = "0x" + strings.ToUpper(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(id)), "0x"))
	return slices.Contains(g.PCIIDs, id)
}
