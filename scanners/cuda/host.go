package cuda

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// HostFacts is what the cuda check knows about one GPU node (or one node
// pool): exactly what `mlwarden cuda host --format yaml` prints, so that a
// host file collected on a node can be checked against in CI.
type HostFacts struct {
	// OS is "linux" (default) or "windows".
	OS string `json:"os" yaml:"os"`
	// DriverVersion is the NVIDIA driver version, e.g. "550.54.15".
	DriverVersion string `json:"driver_version" yaml:"driver_version"`
	// CUDADriverVersion is the CUDA version the driver supports, e.g. "12.4".
	// When empty it is derived from the driver branch.
	CUDADriverVersion string `json:"cuda_driver_version,omitempty" yaml:"cuda_driver_version,omitempty"`
	GPUs              []GPU  `json:"gpus" yaml:"gpus"`
	// ForwardCompat describes a cuda-compat package installed on the host.
	ForwardCompat *ForwardCompat `json:"forward_compat,omitempty" yaml:"forward_compat,omitempty"`
	// ContainerToolkitMode is "legacy" (default) or "cdi"; in cdi mode
	// NVIDIA_REQUIRE_* is not evaluated.
	ContainerToolkitMode string `json:"container_toolkit_mode,omitempty" yaml:"container_toolkit_mode,omitempty"`
	// ContainerToolkitVersion is the NVIDIA Container Toolkit's version
	// ("1.17.8", as `nvidia-ctk --version` prints it, else
	// `nvidia-container-cli --version`); the vulns check judges it.
	ContainerToolkitVersion string `json:"container_toolkit_version,omitempty" yaml:"container_toolkit_version,omitempty"`
}

// GPU is one physical GPU. A MIG-enabled GPU is listed once: its MIG devices
// are checked through it, as the container toolkit does.
type GPU struct {
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Brand is the NVML brand in the container toolkit's lower-case spelling:
	// tesla, nvidia, geforce, quadro, quadrortx, nvidiartx, geforcertx,
	// titan, titanrtx, grid, nvs, vapps, vpc, vcs, vws, cloudgaming, unknown.
	Brand string `json:"brand,omitempty" yaml:"brand,omitempty"`
	// ComputeCapability is "major.minor", e.g. "9.0".
	ComputeCapability string `json:"compute_capability" yaml:"compute_capability"`
	MIG               bool   `json:"mig" yaml:"mig"`
}

// MarshalYAML writes a GPU on one line, as in the documented host file.
func (g GPU) MarshalYAML() (any, error) {
	type plain GPU
	var n yaml.Node
	if err := n.Encode(plain(g)); err != nil {
		return nil, err
	}
	n.Style = yaml.FlowStyle
	return &n, nil
}

// ForwardCompat is a cuda-compat package installed on the host.
type ForwardCompat struct {
	// CUDA is the CUDA version the compat package provides, e.g. "13.0".
	CUDA string `json:"cuda" yaml:"cuda"`
	// SupportedBranches are the host driver branches it supports.
	SupportedBranches []int `json:"supported_branches,omitempty" yaml:"supported_branches,omitempty,flow"`
}

// Pool is a named host: one node pool of an inventory.
type Pool struct {
	Name string
	Host HostFacts
}

// Toolkit modes.
const (
	ModeLegacy = "legacy"
	ModeCDI    = "cdi"
)

// ParseHost reads a host file (YAML or JSON; JSON is YAML) and checks it.
func ParseHost(data []byte) (HostFacts, error) {
	var h HostFacts
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&h); err != nil {
		return HostFacts{}, fmt.Errorf("parse host facts: %w", err)
	}
	if err := h.Normalize(); err != nil {
		return HostFacts{}, err
	}
	return h, nil
}

// Normalize fills defaults, lower-cases brands and validates versions.
func (h *HostFacts) Normalize() error {
	h.OS = strings.ToLower(strings.TrimSpace(h.OS))
	switch h.OS {
	case "":
		h.OS = "linux"
	case "linux", "windows":
	default:
		return fmt.Errorf("host facts: os %q: want linux or windows", h.OS)
	}
	h.ContainerToolkitMode = strings.ToLower(strings.TrimSpace(h.ContainerToolkitMode))
	switch h.ContainerToolkitMode {
	case "":
		h.ContainerToolkitMode = ModeLegacy
	case ModeLegacy, ModeCDI:
	default:
		return fmt.Errorf("host facts: container_toolkit_mode %q: want legacy or cdi", h.ContainerToolkitMode)
	}
	h.DriverVersion = strings.TrimSpace(h.DriverVersion)
	if h.DriverVersion == "" {
		return fmt.Errorf("host facts: driver_version is missing")
	}
	if !isVersion(h.DriverVersion) {
		return fmt.Errorf("host facts: driver_version %q is not a version like 550.54.15", h.DriverVersion)
	}
	h.ContainerToolkitVersion = strings.TrimSpace(h.ContainerToolkitVersion)
	if v := h.ContainerToolkitVersion; v != "" && !toolkitVersionRe.MatchString(v) {
		return fmt.Errorf("host facts: container_toolkit_version %q is not a version like 1.17.8", v)
	}
	if h.CUDADriverVersion != "" && !isVersion(h.CUDADriverVersion) {
		return fmt.Errorf("host facts: cuda_driver_version %q is not a version like 12.4", h.CUDADriverVersion)
	}
	for i := range h.GPUs {
		g := &h.GPUs[i]
		g.Brand = strings.ToLower(strings.TrimSpace(g.Brand))
		if g.Brand == "" {
			g.Brand = "unknown"
		}
		if g.ComputeCapability == "" || !isVersion(g.ComputeCapability) {
			return fmt.Errorf("host facts: gpu %d (%s): compute_capability %q is not a version like 9.0", i, g.Name, g.ComputeCapability)
		}
	}
	if fc := h.ForwardCompat; fc != nil && (fc.CUDA == "" || !isVersion(fc.CUDA)) {
		return fmt.Errorf("host facts: forward_compat.cuda %q is not a version like 13.0", fc.CUDA)
	}
	return nil
}

// LoadHostFile reads a host file.
func LoadHostFile(path string) (HostFacts, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return HostFacts{}, fmt.Errorf("read host file: %w", err)
	}
	h, err := ParseHost(data)
	if err != nil {
		return HostFacts{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// inventoryFile is the --inventory format: named node pools, each either a
// host file (a path relative to the inventory) or the host facts inline.
//
//	pools:
//	  - name: a100-r535
//	    host_file: pools/a100.yaml
//	  - name: h100
//	    host: {driver_version: 580.65.06, gpus: [{compute_capability: "9.0", brand: nvidia}]}
type inventoryFile struct {
	Pools []struct {
		Name     string     `yaml:"name"`
		HostFile string     `yaml:"host_file"`
		Host     *HostFacts `yaml:"host"`
	} `yaml:"pools"`
}

// LoadInventory reads an inventory of named node pools.
func LoadInventory(path string) ([]Pool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read inventory: %w", err)
	}
	pools, err := parseInventory(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pools, nil
}

func parseInventory(data []byte, dir string) ([]Pool, error) {
	var inv inventoryFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&inv); err != nil {
		return nil, fmt.Errorf("parse inventory: %w", err)
	}
	if len(inv.Pools) == 0 {
		return nil, fmt.Errorf("inventory lists no pools")
	}
	seen := map[string]bool{}
	var pools []Pool
	for i, p := range inv.Pools {
		if p.Name == "" {
			return nil, fmt.Errorf("inventory pool %d has no name", i+1)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("inventory pool %q listed twice", p.Name)
		}
		seen[p.Name] = true
		var h HostFacts
		switch {
		case p.Host != nil && p.HostFile != "":
			return nil, fmt.Errorf("inventory pool %q: give host or host_file, not both", p.Name)
		case p.Host != nil:
			h = *p.Host
			if err := h.Normalize(); err != nil {
				return nil, fmt.Errorf("inventory pool %q: %w", p.Name, err)
			}
		case p.HostFile != "":
			f := p.HostFile
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			var err error
			if h, err = LoadHostFile(f); err != nil {
				return nil, fmt.Errorf("inventory pool %q: %w", p.Name, err)
			}
		default:
			return nil, fmt.Errorf("inventory pool %q: give host or host_file", p.Name)
		}
		pools = append(pools, Pool{Name: p.Name, Host: h})
	}
	return pools, nil
}

// JSON writes the host facts as indented JSON.
func (h HostFacts) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// YAML writes the host facts as a host file.
func (h HostFacts) YAML() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(h); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ParseGPUFlag reads a --gpu value: a compute capability and an optional
// brand, "9.0" or "9.0:nvidia".
func ParseGPUFlag(s string) (GPU, error) {
	cc, brand, _ := strings.Cut(s, ":")
	cc = strings.TrimSpace(cc)
	if !isVersion(cc) {
		return GPU{}, fmt.Errorf("compute capability %q is not like 9.0", cc)
	}
	g := GPU{ComputeCapability: cc, Brand: strings.ToLower(strings.TrimSpace(brand))}
	if g.Brand == "" {
		g.Brand = "unknown"
	}
	return g, nil
}
