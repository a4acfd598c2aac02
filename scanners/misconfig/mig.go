package misconfig

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
)

// MIG rules.
var (
	RuleMIGLayoutInvalid = scanners.Rule{
		ID: "misconfig/mig-layout-invalid", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "MIG layout that the GPU cannot have",
		Why:   "A mig-parted config (or the GPU Operator's mig-configs ConfigMap) with a profile the GPU does not offer, more instances than fit, more than seven compute slices or an impossible placement fails when the MIG manager applies it: the node stays in mig.config.state=failed and its GPUs serve no one.",
		Fix:   "Use profiles of the GPU model and a combination that fits its slices; the message shows one that fits.",
	}
	RuleMIGProfileUnknown = scanners.Rule{
		ID: "misconfig/mig-profile-unknown", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "Pod requests a MIG profile the GPU model does not offer",
		Why:   "No node advertises nvidia.com/mig-<profile> for a profile its GPUs do not have, so the pod stays Pending.",
		Fix:   "Request a profile of the GPU model the pod is scheduled on (the message lists them).",
	}
)

// instance is one GPU instance at a placement.
type instance struct {
	profile rules.MIGProfile
	start   int
}

func (i instance) String() string { return fmt.Sprintf("%s@%d", i.profile.Name, i.start) }

// migFit places the instances of counts on GPU g: every instance at one
// of its profile's starts, no two sharing a memory slice. It returns a
// placement, or why there is none.
func migFit(g *rules.MIGGPU, counts map[string]int) ([]instance, string) {
	var want []rules.MIGProfile
	compute, n := 0, 0
	for _, name := range sortedCounts(counts) {
		c := counts[name]
		p, ok := g.Profile(name)
		if !ok {
			return nil, fmt.Sprintf("%s offers no %s (it offers %s)", g.Model, name, profileNames(g))
		}
		if c > p.Max {
			return nil, fmt.Sprintf("%s x%d: %s fits at most %d", name, c, g.Model, p.Max)
		}
		for range c {
			want = append(want, p)
		}
		compute += c * p.Compute
		n += c
	}
	if compute > g.ComputeSlices {
		return nil, fmt.Sprintf("%d compute slices, %s has %d", compute, g.Model, g.ComputeSlices)
	}
	if n > g.MaxInstances {
		return nil, fmt.Sprintf("%d instances, %s allows %d", n, g.Model, g.MaxInstances)
	}
	// Largest first: fewer placements to try.
	slices.SortStableFunc(want, func(a, b rules.MIGProfile) int { return cmp.Compare(b.Size, a.Size) })
	used := make([]bool, g.MemorySlices)
	var out []instance
	var place func(i int) bool
	place = func(i int) bool {
		if i == len(want) {
			return true
		}
		p := want[i]
		for _, s := range p.Starts {
			// Instances of one profile in increasing order: no permutations.
			if i > 0 && want[i-1].Name == p.Name && s <= out[len(out)-1].start {
				continue
			}
			if slices.Contains(used[s:s+p.Size], true) {
				continue
			}
			for j := s; j < s+p.Size; j++ {
				used[j] = true
			}
			out = append(out, instance{p, s})
			if place(i + 1) {
				return true
			}
			out = out[:len(out)-1]
			for j := s; j < s+p.Size; j++ {
				used[j] = false
			}
		}
		return false
	}
	if !place(0) {
		return nil, fmt.Sprintf("no placement on %s's %d memory slices keeps the instances apart (NVIDIA's fixed placements)", g.Model, g.MemorySlices)
	}
	slices.SortFunc(out, func(a, b instance) int { return cmp.Compare(a.start, b.start) })
	return out, ""
}

// migSuggest is the largest part of counts (most compute slices, then most
// instances) that fits on g, with its placement.
func migSuggest(g *rules.MIGGPU, counts map[string]int) []instance {
	names := []string{}
	limits := []int{}
	for _, name := range sortedCounts(counts) {
		if p, ok := g.Profile(name); ok {
			names = append(names, name)
			limits = append(limits, min(counts[name], p.Max))
		}
	}
	var best []instance
	bestCompute := -1
	cur := make([]int, len(names))
	var walk func(i int)
	walk = func(i int) {
		if i == len(names) {
			m := map[string]int{}
			for j, c := range cur {
				if c > 0 {
					m[names[j]] = c
				}
			}
			if len(m) == 0 {
				return
			}
			if got, why := migFit(g, m); why == "" {
				c := 0
				for _, in := range got {
					c += in.profile.Compute
				}
				if c > bestCompute || c == bestCompute && len(got) > len(best) {
					best, bestCompute = got, c
				}
			}
			return
		}
		for c := limits[i]; c >= 0; c-- {
			cur[i] = c
			walk(i + 1)
		}
	}
	walk(0)
	if best == nil {
		// Nothing of the request fits (profiles of another model): the
		// largest profile alone.
		if p := largest(g); p.Name != "" {
			best = []instance{{p, 0}}
		}
	}
	return best
}

func largest(g *rules.MIGGPU) rules.MIGProfile {
	var best rules.MIGProfile
	for _, p := range g.Profiles {
		if p.Compute > best.Compute {
			best = p
		}
	}
	return best
}

func sortedCounts(counts map[string]int) []string {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func profileNames(g *rules.MIGGPU) string {
	var out []string
	for _, p := range g.Profiles {
		out = append(out, p.Name)
	}
	return strings.Join(out, ", ")
}

func layoutString(ins []instance) string {
	var parts []string
	for _, i := range ins {
		parts = append(parts, i.String())
	}
	return strings.Join(parts, " + ")
}

func countsString(counts map[string]int) string {
	var parts []string
	for _, n := range sortedCounts(counts) {
		parts = append(parts, fmt.Sprintf("%s x%d", n, counts[n]))
	}
	return strings.Join(parts, " + ")
}

// migEntry is one entry of a mig-parted config.
type migEntry struct {
	config  string
	index   int
	filters []string
	enabled bool
	counts  map[string]int
	line    int
}

// judgeMIGEntry checks one mig-parted entry against the table and returns
// the finding's message ("" when the layout can exist).
func judgeMIGEntry(t *rules.MIGTable, e migEntry) string {
	if !e.enabled || len(e.counts) == 0 {
		return ""
	}
	for n, c := range e.counts {
		if c < 0 {
			return fmt.Sprintf("mig-parted config %q entry %d: %s x%d is not a count", e.config, e.index, n, c)
		}
		if c == 0 {
			delete(e.counts, n)
		}
	}
	var models []*rules.MIGGPU
	unknownFilter := len(e.filters) > 0
	for i := range t.GPUs {
		g := &t.GPUs[i]
		if len(e.filters) == 0 {
			models = append(models, g)
			continue
		}
		for _, f := range e.filters {
			if g.HasPCIID(f) {
				models = append(models, g)
				unknownFilter = false
				break
			}
		}
	}
	if unknownFilter {
		return "" // a GPU the table does not know: not judged
	}
	what := fmt.Sprintf("mig-parted config %q entry %d (%s)", e.config, e.index, countsString(e.counts))
	if len(e.filters) > 0 {
		what = fmt.Sprintf("mig-parted config %q entry %d for device-filter %s (%s)", e.config, e.index, strings.Join(e.filters, ", "), countsString(e.counts))
	}
	// Without a device filter the entry applies to any GPU: it must fit
	// some model that offers its profiles.
	var reasons []string
	for _, g := range models {
		_, why := migFit(g, e.counts)
		if why == "" {
			return ""
		}
		reasons = append(reasons, why)
	}
	g := bestCandidate(models, e.counts)
	sugg := migSuggest(g, e.counts)
	msg := fmt.Sprintf("%s cannot exist: %s. A layout that fits %s: %s", what, strings.Join(dedupe(reasons), "; "), g.Model, layoutString(sugg))
	if g.Note != "" {
		msg += " (" + g.Model + " table row: " + g.Note + ")"
	}
	return msg
}

// bestCandidate is the model that offers most of the entry's profiles.
func bestCandidate(models []*rules.MIGGPU, counts map[string]int) *rules.MIGGPU {
	best, score := models[0], -1
	for _, g := range models {
		s := 0
		for n := range counts {
			if _, ok := g.Profile(n); ok {
				s++
			}
		}
		if s > score {
			best, score = g, s
		}
	}
	return best
}

func dedupe(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return out
}

// migResourceProfile is the profile of a mixed-strategy resource name
// (nvidia.com/mig-1g.10gb, nvidia.com/mig-1g.10gb.me).
func migResourceProfile(resource string) (string, bool) {
	p, ok := strings.CutPrefix(resource, "nvidia.com/mig-")
	if !ok {
		return "", false
	}
	if base, ok := strings.CutSuffix(p, ".me"); ok {
		p = base + "+me"
	}
	return p, true
}

// judgeMIGRequest checks a requested MIG profile against the model the
// pod selects (product label), else against every model; "" when some
// model offers it.
func judgeMIGRequest(t *rules.MIGTable, resource, product string) string {
	profile, _ := migResourceProfile(resource)
	var offering []string
	for i := range t.GPUs {
		g := &t.GPUs[i]
		if product != "" && g.IsProduct(product) {
			if _, ok := g.Profile(profile); ok {
				return ""
			}
			return fmt.Sprintf("the pod requests %s but selects nvidia.com/gpu.product=%s, a %s, which offers no %s (it offers %s); the pod stays Pending",
				resource, product, g.Model, profile, profileNames(g))
		}
		if _, ok := g.Profile(profile); ok {
			offering = append(offering, g.Model)
		}
	}
	if len(offering) > 0 {
		return ""
	}
	var all []string
	for i := range t.GPUs {
		all = append(all, t.GPUs[i].Model+": "+profileNames(&t.GPUs[i]))
	}
	return fmt.Sprintf("the pod requests %s, a profile no GPU in the MIG table offers (%s); the pod stays Pending", resource, strings.Join(all, "; "))
}
