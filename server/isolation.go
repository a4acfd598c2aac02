//go:build !mlwarden_sbatch

package server

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/misconfig"
)

// IsolationRules lists the GPU pod isolation rules the webhook enforces
// for namespaces whose policy sets isolation to deny or warn: the misconfig
// check's, so that a manifest scan and an admission answer agree.
func IsolationRules() []scanners.Rule {
	return []scanners.Rule{misconfig.RuleGPUHostNamespace, misconfig.RuleGPUHostPath}
}

// checkIsolation applies the GPU pod isolation rules (host namespaces,
// host paths to /dev, the NVIDIA runtime directories and the container
// runtime socket) to a pod spec, as the namespace's policy says: deny,
// warn, or (the default) nothing.
func checkIsolation(a *answer, pol Policy, spec *corev1.PodSpec) {
	if pol.Isolation != Deny && pol.Isolation != Warn {
		return
	}
	for _, p := range misconfig.GPUPodIsolation(spec) {
		a.act(pol.Isolation, "%s: %s", p.Rule.ID, p.Message)
	}
}
