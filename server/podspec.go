//go:build !mlwarden_sbatch

package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/misconfig"
)

// podSpecOf decodes the pod spec inside an admitted object of the given kind.
// It returns nil for a kind that holds no pod template.
func podSpecOf(kind string, raw []byte) (*corev1.PodSpec, error) {
	var (
		spec *corev1.PodSpec
		err  error
	)
	switch kind {
	case "Pod":
		var o corev1.Pod
		err, spec = json.Unmarshal(raw, &o), &o.Spec
	case "Deployment":
		var o appsv1.Deployment
		err, spec = json.Unmarshal(raw, &o), &o.Spec.Template.Spec
	case "StatefulSet":
		var o appsv1.StatefulSet
		err, spec = json.Unmarshal(raw, &o), &o.Spec.Template.Spec
	case "DaemonSet":
		var o appsv1.DaemonSet
		err, spec = json.Unmarshal(raw, &o), &o.Spec.Template.Spec
	case "ReplicaSet":
		var o appsv1.ReplicaSet
		err, spec = json.Unmarshal(raw, &o), &o.Spec.Template.Spec
	case "ReplicationController":
		var o corev1.ReplicationController
		err = json.Unmarshal(raw, &o)
		if o.Spec.Template != nil {
			spec = &o.Spec.Template.Spec
		} else {
			spec = &corev1.PodSpec{}
		}
	case "Job":
		var o batchv1.Job
		err, spec = json.Unmarshal(raw, &o), &o.Spec.Template.Spec
	case "CronJob":
		var o batchv1.CronJob
		err, spec = json.Unmarshal(raw, &o), &o.Spec.JobTemplate.Spec.Template.Spec
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return spec, nil
}

// podImage is one image and the containers that run it.
type podImage struct {
	image      string
	containers []string
}

// imagesOf lists every distinct image of every container, init container and
// ephemeral container, in the order they appear.
func imagesOf(spec *corev1.PodSpec) []podImage {
	var out []podImage
	at := map[string]int{} // a review may list tens of thousands
	add := func(image, container string) {
		if i, ok := at[image]; ok {
			out[i].containers = append(out[i].containers, container)
			return
		}
		at[image] = len(out)
		out = append(out, podImage{image: image, containers: []string{container}})
	}
	for _, c := range spec.InitContainers {
		add(c.Image, c.Name)
	}
	for _, c := range spec.Containers {
		add(c.Image, c.Name)
	}
	for _, c := range spec.EphemeralContainers {
		add(c.Image, c.Name)
	}
	return out
}

// AdmissionRules lists the Pod-level rules the webhook checks: the misconfig
// check's own rules, so that a finding at admission and one in a manifest
// scan carry the same ID.
func AdmissionRules() []scanners.Rule {
	return []scanners.Rule{misconfig.RulePrivileged, misconfig.RuleGPUIsolation}
}

// podProblem is one misconfiguration found in a pod spec.
type podProblem struct {
	rule scanners.Rule
	msg  string
}

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// misconfigOf checks a pod spec against the Pod-level rules.
func misconfigOf(spec *corev1.PodSpec) []podProblem {
	var out []podProblem
	check := func(kind, name string, sc *corev1.SecurityContext, env []corev1.EnvVar, res corev1.ResourceRequirements) {
		if sc != nil && sc.Privileged != nil && *sc.Privileged {
			out = append(out, podProblem{misconfig.RulePrivileged, fmt.Sprintf(
				"%s %q is privileged: it can take over the node and every GPU job on it; drop securityContext.privileged and request GPUs with %s", kind, name, gpuResource)})
		}
		for _, e := range env {
			if e.Name != "NVIDIA_VISIBLE_DEVICES" {
				continue
			}
			v := strings.ToLower(strings.TrimSpace(e.Value))
			if v == "" && e.ValueFrom == nil || v == "void" || v == "none" {
				continue
			}
			if _, ok := res.Limits[gpuResource]; ok {
				continue
			}
			if _, ok := res.Requests[gpuResource]; ok {
				continue
			}
			out = append(out, podProblem{misconfig.RuleGPUIsolation, fmt.Sprintf(
				"%s %q sets NVIDIA_VISIBLE_DEVICES=%s without requesting %s: the NVIDIA runtime exposes GPUs given to other pods; request %s and drop the variable",
				kind, name, e.Value, gpuResource, gpuResource)})
		}
	}
	for _, c := range spec.InitContainers {
		check("init container", c.Name, c.SecurityContext, c.Env, c.Resources)
	}
	for _, c := range spec.Containers {
		check("container", c.Name, c.SecurityContext, c.Env, c.Resources)
	}
	for _, c := range spec.EphemeralContainers {
		check("ephemeral container", c.Name, c.SecurityContext, c.Env, c.Resources)
	}
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		p := "/" + strings.Trim(v.HostPath.Path, "/")
		if strings.HasPrefix(p, "/dev/nvidia") || slices.Contains([]string{"/dev", "/dev/dri"}, p) {
			out = append(out, podProblem{misconfig.RuleGPUIsolation, fmt.Sprintf(
				"volume %q mounts host path %s: GPU device nodes outside the device plugin's allocation; remove it and request %s", v.Name, v.HostPath.Path, gpuResource)})
		}
	}
	return out
}
