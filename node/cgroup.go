package node

import (
	"regexp"
	"strings"
)

// Allocation is the scheduler allocation a process's cgroup puts it in.
type Allocation struct {
	// Kind is "slurm" (a job step), "k8s" (a pod) or "" (neither).
	Kind string `json:"kind,omitempty"`
	// Job is a Slurm job: its numeric ID or, from Slurm 26.05, its SLUID.
	Job string `json:"job,omitempty"`
	// Step is the job step directory (step_0, step_extern, step_batch).
	Step string `json:"step,omitempty"`
	// Pod is a Kubernetes pod's UID; Container its container ID.
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// Slurmstepd is set for slurmstepd's own cgroup (…/slurmstepd.scope/system).
	Slurmstepd bool `json:"-"`
}

// Name names the allocation for a report: "slurm job 123 step_0", "pod UID".
func (a Allocation) Name() string {
	switch a.Kind {
	case "slurm":
		s := "slurm job " + a.Job
		if a.Step != "" {
			s += " " + a.Step
		}
		return s
	case "k8s":
		s := "pod " + a.Pod
		if a.Container != "" {
			s += " container " + shortID(a.Container)
		}
		return s
	}
	return ""
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

var (
	// A Slurm 26.05 SLUID: 14 characters of Crockford base32 starting with
	// s (src/common/sluid.h).
	sluidRE = regexp.MustCompile(`^s[0-9A-Z]{13}$`)
	jobRE   = regexp.MustCompile(`^job_([0-9]+)$`)
	// kubepods-burstable-pod<uid with _>.slice (systemd driver) or
	// pod<uid> (cgroupfs driver).
	podRE = regexp.MustCompile(`^(?:kubepods(?:-besteffort|-burstable)?-)?pod([0-9a-fA-F][0-9a-fA-F_-]{7,63})(?:\.slice)?$`)
	// cri-containerd-<id>.scope, crio-<id>.scope, docker-<id>.scope, or a bare id.
	ctrRE = regexp.MustCompile(`^(?:(?:cri-containerd|crio|docker|containerd)-)?([0-9a-f]{32,64})(?:\.scope)?$`)
)

// Classify reads the allocation from a process's cgroup paths (every line
// of /proc/PID/cgroup: v1 has one per controller hierarchy, v2 one).
//
// Slurm: cgroup/v1 …/slurm/uid_U/job_N/step_S/…; cgroup/v2
// …/[NODE_]slurmstepd.scope/job_N/step_S/… and, from 26.05 by default,
// …/slurmstepd.scope/SLUID/step_S/…. Kubernetes: …/kubepods…/pod<uid>/…
// (cgroupfs driver) and …kubepods-<qos>-pod<uid_with_underscores>.slice/…
// (systemd driver).
func Classify(paths []string) Allocation {
	for _, p := range paths {
		if a := classifyPath(p); a.Kind != "" || a.Slurmstepd {
			return a
		}
	}
	return Allocation{}
}

func classifyPath(p string) Allocation {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i, c := range parts {
		switch {
		case c == "slurm" && i+2 < len(parts) && strings.HasPrefix(parts[i+1], "uid_"):
			if m := jobRE.FindStringSubmatch(parts[i+2]); m != nil {
				return Allocation{Kind: "slurm", Job: m[1], Step: at(parts, i+3)}
			}
		case strings.HasSuffix(c, "slurmstepd.scope") && i+1 < len(parts):
			next := parts[i+1]
			if m := jobRE.FindStringSubmatch(next); m != nil {
				return Allocation{Kind: "slurm", Job: m[1], Step: at(parts, i+2)}
			}
			if sluidRE.MatchString(next) {
				return Allocation{Kind: "slurm", Job: next, Step: at(parts, i+2)}
			}
			if next == "system" {
				return Allocation{Slurmstepd: true}
			}
		case strings.HasPrefix(c, "kubepods"):
			for j := i; j < len(parts); j++ {
				m := podRE.FindStringSubmatch(parts[j])
				if m == nil {
					continue
				}
				a := Allocation{Kind: "k8s", Pod: strings.ReplaceAll(m[1], "_", "-")}
				if j+1 < len(parts) {
					if cm := ctrRE.FindStringSubmatch(parts[j+1]); cm != nil {
						a.Container = cm[1]
					}
				}
				return a
			}
		}
	}
	return Allocation{}
}

func at(parts []string, i int) string {
	if i < len(parts) && strings.HasPrefix(parts[i], "step_") {
		return parts[i]
	}
	return ""
}
