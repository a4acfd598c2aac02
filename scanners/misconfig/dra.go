//go:build !mlwarden_sbatch

package misconfig

import (
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/mlwarden/mlwarden/scanners"
)

// Dynamic Resource Allocation (resource.k8s.io v1, and the v1beta1 and
// v1beta2 shapes before it): pods that get GPUs through
// spec.resourceClaims, the claims' device classes, adminAccess requests
// and the NVIDIA driver's GpuConfig sharing.
var RuleGPUClaimAdminAccess = scanners.Rule{
	ID: "misconfig/gpu-claim-admin-access", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
	Title: "DRA request with adminAccess outside an administrators' namespace",
	Why: "adminAccess: true on a device request grants access to devices already allocated to others: their GPU memory and processes. " +
		"Kubernetes admits it only in a namespace labelled resource.kubernetes.io/admin-access: \"true\", the administrators' namespace the API requires.",
	Fix: "Keep adminAccess requests (monitoring, debugging) in a namespace labelled resource.kubernetes.io/admin-access: \"true\" that only administrators can create pods in; remove adminAccess from tenant claims.",
}

// nvidiaClasses are the DeviceClasses of NVIDIA's DRA driver for GPUs
// (deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-*.yaml).
var nvidiaClasses = []string{"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"}

// celDriver finds the driver a DeviceClass selector's CEL expression
// compares device.driver with, on either side of ==.
var celDriver = regexp.MustCompile(`device\.driver\s*==\s*["']([^"']+)["']|["']([^"']+)["']\s*==\s*device\.driver`)

// nvidiaGPUDriver reports whether a DRA driver name is NVIDIA's GPU
// driver (gpu.nvidia.com and names under it). compute-domain.nvidia.com
// hands out IMEX channels, not GPUs.
func nvidiaGPUDriver(d string) bool {
	return d == "gpu.nvidia.com" || strings.HasSuffix(d, ".gpu.nvidia.com")
}

// selectsNVIDIA reports whether a DeviceClass's selectors name an NVIDIA
// GPU driver.
func selectsNVIDIA(class *yaml.Node) bool {
	sels := get(get(class, "spec"), "selectors")
	if sels == nil || sels.Kind != yaml.SequenceNode {
		return false
	}
	for _, s := range sels.Content {
		for _, m := range celDriver.FindAllStringSubmatch(scalarOf(get(get(s, "cel"), "expression")), 8) {
			if nvidiaGPUDriver(m[1]) || nvidiaGPUDriver(m[2]) {
				return true
			}
		}
	}
	return false
}

// claimRef is a pod's reference to a ResourceClaim or a
// ResourceClaimTemplate of its namespace.
type claimRef struct {
	Name     string `json:"name"`
	Template bool   `json:"template,omitempty"`
}

func (c claimRef) key(ns string) string {
	if c.Template {
		return "ResourceClaimTemplate/" + ns + "/" + c.Name
	}
	return "ResourceClaim/" + ns + "/" + c.Name
}

// podClaims lists a pod spec's DRA claims.
func podClaims(spec *corev1.PodSpec) []claimRef {
	var out []claimRef
	for _, c := range spec.ResourceClaims {
		switch {
		case c.ResourceClaimName != nil && *c.ResourceClaimName != "":
			out = append(out, claimRef{Name: *c.ResourceClaimName})
		case c.ResourceClaimTemplateName != nil && *c.ResourceClaimTemplateName != "":
			out = append(out, claimRef{Name: *c.ResourceClaimTemplateName, Template: true})
		}
	}
	return out
}

// DRAClaims names the DRA resource claims of a pod spec
// (spec.resourceClaims), for messages: "gpu (claim shared-gpu)".
func DRAClaims(spec *corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.ResourceClaims {
		switch {
		case c.ResourceClaimName != nil:
			out = append(out, c.Name+" (ResourceClaim "+*c.ResourceClaimName+")")
		case c.ResourceClaimTemplateName != nil:
			out = append(out, c.Name+" (ResourceClaimTemplate "+*c.ResourceClaimTemplateName+")")
		}
	}
	return out
}

// place is where a fact was read.
type place struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Layer  string `json:"layer,omitempty"`
	Commit string `json:"commit,omitempty"`
	Note   string `json:"note,omitempty"`
}

func (r *clusterRun) place(line int) place {
	return place{Path: r.a.Path, Line: line, Layer: r.a.Layer, Commit: r.a.Commit, Note: r.a.Note}
}

// claimFact is what the namespace judgement needs of a ResourceClaim or a
// ResourceClaimTemplate.
type claimFact struct {
	Classes []string    `json:"classes,omitempty"`
	Sharing []shareFact `json:"sharing,omitempty"`
	place
}

// shareFact is a GpuConfig (or MigDeviceConfig) sharing strategy that
// gives no memory or fault isolation.
type shareFact struct {
	Strategy string `json:"strategy"`
	Line     int    `json:"line"`
}

// adminFact is a request with adminAccess: true.
type adminFact struct {
	Namespace string `json:"namespace"`
	Who       string `json:"who"`
	Request   string `json:"request"`
	place
}

// draClaim reads a ResourceClaim or ResourceClaimTemplate: its requests'
// device classes (exactly.deviceClassName and firstAvailable[] in v1 and
// v1beta2, deviceClassName in v1beta1), adminAccess, and the opaque
// parameters' sharing strategy. A claim generated from a template for a
// pod (a live object owned by its Pod) is judged at the template.
func (r *clusterRun) draClaim(kind string, n *yaml.Node, offset, line int) {
	meta := get(n, "metadata")
	if owners := get(meta, "ownerReferences"); owners != nil && owners.Kind == yaml.SequenceNode {
		for _, o := range owners.Content {
			if scalarOf(get(o, "kind")) == "Pod" {
				return
			}
		}
	}
	ns, name := scalarOf(get(meta, "namespace")), scalarOf(get(meta, "name"))
	spec := get(n, "spec")
	if kind == "ResourceClaimTemplate" {
		spec = get(spec, "spec")
	}
	devices := get(spec, "devices")
	f := claimFact{place: r.place(line)}
	who := kind + " " + name
	addClass := func(c string) {
		if c != "" && !slices.Contains(f.Classes, c) {
			f.Classes = append(f.Classes, c)
		}
	}
	if reqs := get(devices, "requests"); reqs != nil && reqs.Kind == yaml.SequenceNode {
		for _, req := range reqs.Content {
			req = resolve(req)
			exactly := get(req, "exactly")
			addClass(scalarOf(get(req, "deviceClassName")))
			addClass(scalarOf(get(exactly, "deviceClassName")))
			if fa := get(req, "firstAvailable"); fa != nil && fa.Kind == yaml.SequenceNode {
				for _, sub := range fa.Content {
					addClass(scalarOf(get(sub, "deviceClassName")))
				}
			}
			for _, aa := range []*yaml.Node{get(req, "adminAccess"), get(exactly, "adminAccess")} {
				if isTrue(aa) {
					r.facts.addAdmin(adminFact{Namespace: ns, Who: who, Request: scalarOf(get(req, "name")), place: r.place(aa.Line + offset)})
				}
			}
		}
	}
	if cfgs := get(devices, "config"); cfgs != nil && cfgs.Kind == yaml.SequenceNode {
		for _, c := range cfgs.Content {
			st := get(get(get(get(c, "opaque"), "parameters"), "sharing"), "strategy")
			if s := scalarOf(st); s == "TimeSlicing" || s == "MPS" {
				f.Sharing = append(f.Sharing, shareFact{Strategy: s, Line: st.Line + offset})
			}
		}
	}
	r.facts.addClaim(kind+"/"+ns+"/"+name, f)
}

// gpuClass reports whether a device class hands out NVIDIA GPUs: one of
// the driver's classes, or a DeviceClass of the target whose selector
// names the driver.
func (s *clusterState) gpuClass(class string) bool {
	return slices.Contains(nvidiaClasses, class) || s.t.Classes[class]
}

// claimGPUs lists the GPU classes a workload's claims ask for
// ("ResourceClaim shared: gpu.nvidia.com"); empty when none does or the
// claims are not in the target.
func (s *clusterState) claimGPUs(w workloadFact) []string {
	var out []string
	for _, c := range w.claims {
		f, ok := s.t.Claims[c.key(w.namespace)]
		if !ok {
			continue
		}
		for _, cl := range f.Classes {
			if s.gpuClass(cl) {
				kind := "ResourceClaim"
				if c.Template {
					kind = "ResourceClaimTemplate"
				}
				out = append(out, kind+" "+c.Name+" (device class "+cl+")")
				break
			}
		}
	}
	return out
}

// isGPU reports whether a workload gets GPUs: from the device plugin, or
// through DRA claims of a GPU device class.
func (s *clusterState) isGPU(w workloadFact) bool {
	return len(w.gpus) > 0 || len(s.claimGPUs(w)) > 0
}

// quotaBoundsGPU reports whether a namespace's quotas bound GPUs: the
// device plugin's resources, or devices of a GPU device class
// (<class>.deviceclass.resource.k8s.io/devices).
func (s *clusterState) quotaBoundsGPU(ns string) bool {
	if s.quota[ns] {
		return true
	}
	for _, c := range s.t.QuotaClasses[ns] {
		if s.gpuClass(c) {
			return true
		}
	}
	return false
}

// quotaClasses lists the device classes a quota's hard limits name.
func quotaClasses(hard corev1.ResourceList) []string {
	var out []string
	for n := range hard {
		s := strings.TrimPrefix(string(n), "requests.")
		if c, ok := strings.CutSuffix(s, ".deviceclass.resource.k8s.io/devices"); ok && c != "" {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
