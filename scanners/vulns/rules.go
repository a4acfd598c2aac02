package vulns

import (
	"slices"

	"github.com/mlwarden/mlwarden/scanners"
)

// Rule IDs of the vulns check. A finding's severity is its advisory's; the
// rules' severities are the highest they report.
const (
	RuleContainerToolkit  = "vulns/container-toolkit"
	RuleGPUOperator       = "vulns/gpu-operator"
	RuleGPUDriver         = "vulns/gpu-driver"
	RuleDriverUnsupported = "vulns/driver-branch-unsupported"
	RulePythonPackage     = "vulns/python-package"
	RuleTorchLoadWeights  = "vulns/torch-load-weights-only"
	RuleNotScanned        = "vulns/not-scanned"
)

var allRules = []scanners.Rule{
	{ID: RuleContainerToolkit, Check: scanners.CheckVulns, Severity: scanners.SeverityCritical,
		Title: "NVIDIA Container Toolkit / libnvidia-container version with a known vulnerability",
		Why:   "old toolkit releases let a crafted container image reach the host file system or run code on the host (container escape on every GPU node)",
		Fix:   "upgrade the toolkit packages (nvidia-container-toolkit, libnvidia-container1) or the GPU Operator's toolkit image to the fixed version or later"},
	{ID: RuleGPUOperator, Check: scanners.CheckVulns, Severity: scanners.SeverityCritical,
		Title: "NVIDIA GPU Operator, device plugin or MIG manager version with a known vulnerability",
		Why:   "the GPU Operator deploys the container toolkit and its hooks on every GPU node; its vulnerable releases ship a vulnerable toolkit",
		Fix:   "upgrade the chart (helm upgrade --version) or the component's image tag to the fixed version or later"},
	{ID: RuleGPUDriver, Check: scanners.CheckVulns, Severity: scanners.SeverityHigh,
		Title: "NVIDIA GPU driver older than its branch's security fix",
		Why:   "NVIDIA's security bulletins fix driver vulnerabilities (escalation of privileges, code execution, denial of service) per branch; an unpatched node is exposed to every job that runs on it",
		Fix:   "install the bulletin's fixed driver of the same branch or later (or a newer supported branch)"},
	{ID: RuleDriverUnsupported, Check: scanners.CheckVulns, Severity: scanners.SeverityMedium,
		Title: "NVIDIA GPU driver branch that NVIDIA's security bulletins no longer fix",
		Why:   "a bulletin that lists newer and older branches but not this one gives it no fixed version: vulnerabilities found since stay open on it",
		Fix:   "move to a branch the latest bulletin lists (a long-term support branch such as R535 or R580) at its fixed version or later"},
	{ID: RulePythonPackage, Check: scanners.CheckVulns, Severity: scanners.SeverityCritical,
		Title: "ML Python package version with a known vulnerability",
		Why:   "torch, transformers, vLLM, Ray, MLflow and Gradio releases with known code execution or file access vulnerabilities, often reachable from a crafted model or over the network",
		Fix:   "pin the fixed version or later (requirements, lock file or image) and rebuild"},
	{ID: RuleTorchLoadWeights, Check: scanners.CheckVulns, Severity: scanners.SeverityCritical,
		Title: "torch.load with a torch release whose weights_only=True still runs code (CVE-2025-32434)",
		Why:   "before torch 2.6.0, torch.load(weights_only=True) can still be made to run code by a crafted checkpoint, so the usual fix for torch.load does not hold",
		Fix:   "upgrade torch to 2.6.0 or later, and load weights as safetensors where possible"},
	{ID: RuleNotScanned, Check: scanners.CheckVulns, Severity: scanners.SeverityInfo,
		Title: "a package list or manifest was read only in part",
		Why:   "only the first part of a very large package database, lock file or manifest was checked for vulnerable versions",
		Fix:   "check the file's size; split it, or check the rest with another tool"},
}

func ruleByID(id string) scanners.Rule {
	for _, r := range allRules {
		if r.ID == id {
			return r
		}
	}
	panic("vulns: unknown rule " + id)
}

// Rules lists the check's rules.
func (s *Scanner) Rules() []scanners.Rule { return slices.Clone(allRules) }
