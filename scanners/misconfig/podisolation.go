//go:build !mlwarden_sbatch

package misconfig

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mlwarden/mlwarden/scanners"
)

// Pod rules of multi-tenant GPU isolation: a manifest scan reports them,
// and `mlwarden serve` enforces them for namespaces that opt in.
var (
	RuleGPUHostNamespace = scanners.Rule{
		ID: "misconfig/gpu-pod-host-namespace", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "GPU pod shares the node's IPC, PID or network namespace",
		Why:   "hostIPC, hostPID and hostNetwork let a GPU job see and signal other tenants' processes, read their shared memory (CUDA IPC handles) and reach node-local services, on nodes whose GPUs are shared.",
		Fix:   "Remove hostIPC, hostPID and hostNetwork from GPU workloads; use a Service for networking and the device plugin for GPUs.",
	}
	RuleGPUHostPath = scanners.Rule{
		ID: "misconfig/gpu-pod-host-path", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "GPU pod mounts /dev, the NVIDIA driver's runtime directory or the container runtime socket",
		Why:   "A hostPath to /dev hands over every device of the node, /run/nvidia (or /var/run/nvidia*) the driver and toolkit files of all tenants, and the container runtime socket lets the pod start privileged containers: each is a way out of the tenant's isolation.",
		Fix:   "Remove the hostPath volume; request GPUs through the device plugin (resources.limits nvidia.com/gpu) and leave the runtime socket to node agents.",
	}
)

// PodProblem is one isolation problem of a GPU pod spec.
type PodProblem struct {
	Rule scanners.Rule
	// Field names what was found ("hostPID", "hostPath /dev"), as a
	// finding's evidence.
	Field string
	// Message says what, why and how to fix it.
	Message string
}

// gpuResources are the resource names of GPUs and GPU shares the NVIDIA
// device plugin advertises.
func isGPUResource(name corev1.ResourceName) bool {
	n := string(name)
	return n == "nvidia.com/gpu" || n == "nvidia.com/gpu.shared" || strings.HasPrefix(n, "nvidia.com/mig-")
}

// GPUResources lists the GPU resources a pod spec requests or limits,
// sorted.
func GPUResources(spec *corev1.PodSpec) []string {
	var out []string
	add := func(res corev1.ResourceRequirements) {
		for _, rl := range []corev1.ResourceList{res.Limits, res.Requests} {
			for n := range rl {
				if isGPUResource(n) && !slices.Contains(out, string(n)) {
					out = append(out, string(n))
				}
			}
		}
	}
	for _, c := range spec.InitContainers {
		add(c.Resources)
	}
	for _, c := range spec.Containers {
		add(c.Resources)
	}
	slices.Sort(out)
	return out
}

// runtimeSockets are the container runtimes' API sockets.
var runtimeSockets = []string{
	"/var/run/docker.sock", "/run/docker.sock",
	"/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock",
	"/run/crio/crio.sock", "/var/run/crio/crio.sock",
	"/run/k3s/containerd/containerd.sock", "/var/run/cri-dockerd.sock", "/run/cri-dockerd.sock",
}

// sensitiveHostPath says why mounting host path p breaks isolation, or "".
// /dev/nvidia* is misconfig/gpu-isolation-bypass's, not this rule's.
func sensitiveHostPath(p string) string {
	p = path.Clean("/" + strings.TrimSpace(p))
	switch {
	case p == "/":
		return "the node's whole file system"
	case strings.HasPrefix(p, "/dev/nvidia"):
		return ""
	case p == "/dev" || strings.HasPrefix(p, "/dev/"):
		return "the node's devices"
	case strings.HasPrefix(p, "/run/nvidia") || strings.HasPrefix(p, "/var/run/nvidia"):
		return "the NVIDIA driver and toolkit runtime files shared by every tenant"
	}
	for _, s := range runtimeSockets {
		if p == s || strings.HasPrefix(s, p+"/") {
			return "the container runtime socket (" + s + ")"
		}
	}
	return ""
}

// GPUPodIsolation checks a pod spec that requests GPUs against the pod
// rules of multi-tenant isolation; a pod without GPUs gives nothing.
func GPUPodIsolation(spec *corev1.PodSpec) []PodProblem {
	return GPUPodIsolationAs(spec, GPUResources(spec))
}

// GPUPodIsolationAs checks a pod spec that gets the GPUs gpus (resource
// names, or what its DRA claims ask for) against the pod rules; no GPUs
// give nothing.
func GPUPodIsolationAs(spec *corev1.PodSpec, gpus []string) []PodProblem {
	if len(gpus) == 0 {
		return nil
	}
	var out []PodProblem
	for _, h := range []struct {
		on    bool
		field string
		what  string
	}{
		{spec.HostIPC, "hostIPC", "the node's IPC namespace: other pods' shared memory and CUDA IPC handles"},
		{spec.HostPID, "hostPID", "the node's PID namespace: other tenants' processes, their environment and /proc"},
		{spec.HostNetwork, "hostNetwork", "the node's network namespace: node-local services and other pods' traffic"},
	} {
		if h.on {
			out = append(out, PodProblem{RuleGPUHostNamespace, h.field + ": true", fmt.Sprintf(
				"%s: true gives a pod that requests %s %s. Remove it from GPU workloads", h.field, strings.Join(gpus, ", "), h.what)})
		}
	}
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		if why := sensitiveHostPath(v.HostPath.Path); why != "" {
			out = append(out, PodProblem{RuleGPUHostPath, "hostPath " + v.HostPath.Path, fmt.Sprintf(
				"volume %q mounts host path %s into a pod that requests %s: %s. Remove the volume; GPUs come from the device plugin",
				v.Name, v.HostPath.Path, strings.Join(gpus, ", "), why)})
		}
	}
	return out
}
