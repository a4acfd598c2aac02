// Package cuda is the cuda check: it reads which CUDA version an artifact
// declares (an image's CUDA_VERSION and NVIDIA_REQUIRE_* variables, compat
// libraries, PyTorch builds, pip and conda pins, module loads, arch lists)
// and decides with NVIDIA's own rules whether a host's driver and GPUs can
// run it. Host facts come from NVML on the local node, from a host file, from
// an inventory of node pools, or from flags.
package cuda

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
)

// Rule IDs.
const (
	RuleIncompatible          = "cuda/incompatible"
	RuleForwardCompatRequired = "cuda/forward-compat-required"
	RuleArchUnsupported       = "cuda/arch-unsupported"
	RuleRequirementInvalid    = "cuda/requirement-invalid"
	RuleUndeclared            = "cuda/undeclared"
	RuleNoHostFacts           = "cuda/no-host-facts"
)

var ruleList = []scanners.Rule{
	{ID: RuleIncompatible, Check: scanners.CheckCUDA, Severity: scanners.SeverityHigh,
		Title: "CUDA build cannot run on the host's driver",
		Why:   "the container fails at start, or the first CUDA call fails with 'driver too old', after GPU hours were booked",
		Fix:   "use a build for an older CUDA (e.g. a +cuXYZ wheel or a CUDA base image the driver supports), or upgrade the node's driver"},
	{ID: RuleForwardCompatRequired, Check: scanners.CheckCUDA, Severity: scanners.SeverityLow,
		Title: "CUDA build runs only through forward compatibility (cuda-compat)",
		Why:   "it works only with the cuda-compat libraries on data-center GPUs and a supported driver branch; anything else fails with CUDA error 804",
		Fix:   "keep the compat package and the driver branch as listed, or build for the CUDA the driver supports natively"},
	{ID: RuleArchUnsupported, Check: scanners.CheckCUDA, Severity: scanners.SeverityHigh,
		Title: "no kernels for the host's GPU architecture",
		Why:   "the CUDA version or the arch list has no cubin or PTX the GPU can run: 'no kernel image is available for execution on the device'",
		Fix:   "build for the GPU's compute capability (TORCH_CUDA_ARCH_LIST, a newer +cuXYZ wheel) or schedule on GPUs the build supports"},
	{ID: RuleRequirementInvalid, Check: scanners.CheckCUDA, Severity: scanners.SeverityHigh,
		Title: "NVIDIA_REQUIRE_* or CUDA_VERSION cannot be parsed by the NVIDIA container toolkit",
		Why:   "the toolkit rejects the expression and the container never starts on any GPU node",
		Fix:   "write the requirement as space-separated alternatives of comma-separated cuda/driver/arch/brand comparisons, e.g. 'cuda>=12.4 brand=tesla,driver>=535,driver<536'"},
	{ID: RuleUndeclared, Check: scanners.CheckCUDA, Severity: scanners.SeverityInfo,
		Title: "uses CUDA without saying which version",
		Why:   "the CUDA version is chosen at install or load time (a site default module, PyPI's default torch wheel), so compatibility cannot be checked",
		Fix:   "pin it: torch==X+cuXYZ or an index URL, cuda-version=X.Y, module load cuda/X.Y"},
	{ID: RuleNoHostFacts, Check: scanners.CheckCUDA, Severity: scanners.SeverityInfo,
		Title: "declares CUDA but no host facts to check it against",
		Why:   "without the target node's driver and GPUs the CUDA requirement was not checked",
		Fix:   "run on a GPU node, or give --host FILE or --inventory FILE (see 'mlwarden cuda host')"},
}

// Scanner is the cuda check.
type Scanner struct {
	table *rules.CUDATable
	pools []Pool
	// hostNote says why there are no host facts (empty when there are).
	hostNote string
}

type config struct {
	hosts     []Pool
	hostFiles []string
	inventory string
	driver    string
	gpus      []GPU
	local     bool
	rulesFS   fs.FS
	table     *rules.CUDATable
	probe     func(context.Context) (HostFacts, error)
}

// Option configures the cuda check.
type Option func(*config)

// WithHost checks against the given host facts (a pool named "host").
func WithHost(h HostFacts) Option {
	return func(c *config) { c.hosts = append(c.hosts, Pool{Name: "host", Host: h}) }
}

// WithPool checks against a named host.
func WithPool(name string, h HostFacts) Option {
	return func(c *config) { c.hosts = append(c.hosts, Pool{Name: name, Host: h}) }
}

// WithHostFile checks against a host file (YAML or JSON, as `mlwarden cuda
// host` prints it).
func WithHostFile(path string) Option {
	return func(c *config) { c.hostFiles = append(c.hostFiles, path) }
}

// WithInventory checks against every named node pool of an inventory file.
func WithInventory(path string) Option {
	return func(c *config) { c.inventory = path }
}

// WithDriver sets the host driver version (with WithGPUs: host facts from
// flags).
func WithDriver(v string) Option {
	return func(c *config) { c.driver = v }
}

// WithGPUs sets the host's GPUs (with WithDriver).
func WithGPUs(gpus ...GPU) Option {
	return func(c *config) { c.gpus = append(c.gpus, gpus...) }
}

// WithLocalHost reads host facts from this node (NVML, else
// /proc/driver/nvidia/version and nvidia-smi) when no other host facts are
// given. When the node has no NVIDIA driver the check runs without host facts.
func WithLocalHost() Option {
	return func(c *config) { c.local = true }
}

// WithRulesFS loads cuda.yaml from fsys instead of the embedded table.
func WithRulesFS(fsys fs.FS) Option {
	return func(c *config) { c.rulesFS = fsys }
}

// WithTable uses an already loaded table.
func WithTable(t *rules.CUDATable) Option {
	return func(c *config) { c.table = t }
}

// New returns the cuda check. It reads host files and the inventory, and
// probes the local host when asked to.
func New(opts ...Option) (*Scanner, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &Scanner{table: c.table}
	if s.table == nil {
		var err error
		if c.rulesFS != nil {
			s.table, err = rules.LoadCUDA(c.rulesFS)
		} else {
			s.table, err = rules.DefaultCUDA()
		}
		if err != nil {
			return nil, fmt.Errorf("cuda check: %w", err)
		}
	}
	pools, note, err := c.resolveHosts(context.Background())
	if err != nil {
		return nil, fmt.Errorf("cuda check: %w", err)
	}
	s.pools, s.hostNote = pools, note
	return s, nil
}

// resolveHosts turns the options into named hosts. note says why there are
// none.
func (c *config) resolveHosts(ctx context.Context) ([]Pool, string, error) {
	pools := append([]Pool(nil), c.hosts...)
	for i := range pools {
		if err := pools[i].Host.Normalize(); err != nil {
			return nil, "", fmt.Errorf("host %s: %w", pools[i].Name, err)
		}
	}
	for _, f := range c.hostFiles {
		h, err := LoadHostFile(f)
		if err != nil {
			return nil, "", err
		}
		pools = append(pools, Pool{Name: f, Host: h})
	}
	if c.inventory != "" {
		inv, err := LoadInventory(c.inventory)
		if err != nil {
			return nil, "", err
		}
		pools = append(pools, inv...)
	}
	if c.driver != "" || len(c.gpus) > 0 {
		if c.driver == "" {
			return nil, "", fmt.Errorf("GPUs given without a driver version")
		}
		h := HostFacts{DriverVersion: c.driver, GPUs: c.gpus}
		if err := h.Normalize(); err != nil {
			return nil, "", err
		}
		pools = append(pools, Pool{Name: "driver " + c.driver, Host: h})
	}
	if len(pools) > 0 || !c.local {
		if len(pools) == 0 {
			return nil, "no host facts given", nil
		}
		return pools, "", nil
	}
	probe := c.probe
	if probe == nil {
		probe = LocalHost
	}
	h, err := probe(ctx)
	if err != nil {
		return nil, fmt.Sprintf("no host facts: %v", err), nil
	}
	return []Pool{{Name: "local", Host: h}}, "", nil
}

// Check names the check.
func (s *Scanner) Check() string { return scanners.CheckCUDA }

// Rules lists the check's rules.
func (s *Scanner) Rules() []scanners.Rule { return append([]scanners.Rule(nil), ruleList...) }

// Pools returns the hosts the check evaluates against.
func (s *Scanner) Pools() []Pool { return append([]Pool(nil), s.pools...) }

// Table returns the rule table in use.
func (s *Scanner) Table() *rules.CUDATable { return s.table }

func ruleByID(id string) scanners.Rule {
	for _, r := range ruleList {
		if r.ID == id {
			return r
		}
	}
	panic("cuda: unknown rule " + id)
}

// EvaluateAll evaluates d on every host of the scanner.
func (s *Scanner) EvaluateAll(d Declared) []Evaluation {
	out := make([]Evaluation, 0, len(s.pools))
	for _, p := range s.pools {
		out = append(out, Evaluate(s.table, d, p.Name, p.Host))
	}
	return out
}

// HostNote says why the scanner has no host facts ("" when it has some).
func (s *Scanner) HostNote() string { return s.hostNote }
