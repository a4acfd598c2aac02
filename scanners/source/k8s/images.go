//go:build !mlwarden_sbatch

package k8s

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// images are the images the walked workloads run, kept as the walk goes:
// per workload the references its template and its pods name, and the
// digests its pods' statuses report for them. That is all the walk keeps
// of a pod (a cluster of 10,000 pods over 200 workloads keeps 200
// workloads' few references).
type images struct {
	order   []string                       // workloads, in the order first seen
	refs    map[string][]string            // workload → references, in order
	digests map[string]map[string][]string // workload → reference → digest keys
}

func newImages() *images {
	return &images{refs: map[string][]string{}, digests: map[string]map[string][]string{}}
}

// specRefs are the image references of a pod spec: containers, init and
// ephemeral containers, image volumes.
func specRefs(spec *corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.InitContainers {
		out = append(out, c.Image)
	}
	for _, c := range spec.Containers {
		out = append(out, c.Image)
	}
	for _, c := range spec.EphemeralContainers {
		out = append(out, c.Image)
	}
	for _, v := range spec.Volumes {
		if v.Image != nil {
			out = append(out, v.Image.Reference)
		}
	}
	return out
}

func (m *images) add(workload, ref string) {
	if ref == "" {
		return
	}
	refs, seen := m.refs[workload]
	if !seen {
		m.order = append(m.order, workload)
	}
	if !slices.Contains(refs, ref) {
		m.refs[workload] = append(refs, ref)
	}
}

// template records the references of a workload's pod template.
func (m *images) template(workload string, spec *corev1.PodSpec) {
	for _, r := range specRefs(spec) {
		m.add(workload, r)
	}
}

// pod records the references a pod runs, with the digests its status
// reports for its containers.
func (m *images) pod(workload string, p *corev1.Pod) {
	for _, r := range specRefs(&p.Spec) {
		m.add(workload, r)
	}
	byName := map[string]string{}
	for _, c := range p.Spec.InitContainers {
		byName[c.Name] = c.Image
	}
	for _, c := range p.Spec.Containers {
		byName[c.Name] = c.Image
	}
	for _, c := range p.Spec.EphemeralContainers {
		byName[c.Name] = c.Image
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, st := range list {
			ref := byName[st.Name]
			if ref == "" || st.ImageID == "" {
				continue
			}
			k := imageKey(ref, st.ImageID)
			if !strings.Contains(k, "@sha256:") {
				continue
			}
			d := m.digests[workload]
			if d == nil {
				d = map[string][]string{}
				m.digests[workload] = d
			}
			if !slices.Contains(d[ref], k) {
				d[ref] = append(d[ref], k)
			}
		}
	}
}

// use is one distinct image and the workloads that run it.
type use struct {
	ref       string
	workloads []string
}

// maxNoted bounds the workloads an image's note names (the count is whole).
const maxNoted = 100

func (u use) note(target string) string {
	names := u.workloads
	more := ""
	if len(names) > maxNoted {
		more = fmt.Sprintf(" and %d more", len(names)-maxNoted)
		names = names[:maxNoted]
	}
	return fmt.Sprintf("run by %d workload(s) of %s: %s%s", len(u.workloads), target, strings.Join(names, ", "), more)
}

// list returns each distinct image once, by digest where a pod of the
// workload reported one for the reference, sorted by reference.
func (m *images) list() []use {
	idx := map[string]int{}
	var out []use
	for _, w := range m.order {
		for _, ref := range m.refs[w] {
			keys := m.digests[w][ref]
			if len(keys) == 0 {
				keys = []string{imageKey(ref, "")}
			}
			for _, k := range keys {
				i, ok := idx[k]
				if !ok {
					i = len(out)
					idx[k] = i
					out = append(out, use{ref: k})
				}
				if ws := out[i].workloads; len(ws) == 0 || ws[len(ws)-1] != w {
					out[i].workloads = append(out[i].workloads, w)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b use) int { return strings.Compare(a.ref, b.ref) })
	return out
}
