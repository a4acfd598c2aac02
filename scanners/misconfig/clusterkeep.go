//go:build !mlwarden_sbatch

package misconfig

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mlwarden/mlwarden/scanners"
)

// What one file says about the target's namespaces is kept with its
// findings wherever a source caches them (scanners.StateKeeper), so that a
// warm rescan of an image whose layers the cache replays judges the
// namespaces from every layer's manifests, as a cold one does.

var _ scanners.StateKeeper = (*Cluster)(nil)

// StateName implements scanners.StateKeeper.
func (c *Cluster) StateName() string { return "misconfig/cluster" }

// keptCluster is a clusterState in JSON.
type keptCluster struct {
	Namespaces map[string]map[string]string `json:"namespaces,omitempty"`
	Managed    map[string]bool              `json:"managed,omitempty"`
	DenyAll    map[string]bool              `json:"deny_all,omitempty"`
	Quota      map[string]bool              `json:"quota,omitempty"`
	Foreign    map[string][]keptSite        `json:"foreign,omitempty"`
	SATeam     map[string]string            `json:"sa_team,omitempty"`
	Workloads  []keptWorkload               `json:"workloads,omitempty"`
	Slicing    []keptSlice                  `json:"slicing,omitempty"`
	Strategy   []keptStrategy               `json:"strategy,omitempty"`
	Tenancy    tenancyFacts                 `json:"tenancy"`
	Objects    int                          `json:"objects"`
}

type keptSite struct {
	What string `json:"what"`
	Path string `json:"path"`
	Line int    `json:"line"`
}

type keptWorkload struct {
	Namespace string           `json:"namespace"`
	Who       string           `json:"who"`
	Path      string           `json:"path"`
	Line      int              `json:"line"`
	Layer     string           `json:"layer,omitempty"`
	Commit    string           `json:"commit,omitempty"`
	Note      string           `json:"note,omitempty"`
	SA        string           `json:"sa,omitempty"`
	GPUs      []string         `json:"gpus,omitempty"`
	Product   string           `json:"product,omitempty"`
	Claims    []claimRef       `json:"claims,omitempty"`
	Pending   []pendingProblem `json:"pending,omitempty"`
	Own       bool             `json:"own,omitempty"`
}

type keptSlice struct {
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Layer    string `json:"layer,omitempty"`
	Commit   string `json:"commit,omitempty"`
	Note     string `json:"note,omitempty"`
	Resource string `json:"resource"`
	Replicas int    `json:"replicas"`
}

type keptStrategy struct {
	Value string `json:"value"`
	Path  string `json:"path"`
	Line  int    `json:"line"`
}

func keepCluster(s *clusterState) keptCluster {
	k := keptCluster{Namespaces: s.namespaces, Managed: s.managed, DenyAll: s.denyAll, Quota: s.quota, SATeam: s.saTeam, Tenancy: s.t, Objects: s.objects}
	for ns, sites := range s.foreign {
		if k.Foreign == nil {
			k.Foreign = map[string][]keptSite{}
		}
		for _, x := range sites {
			k.Foreign[ns] = append(k.Foreign[ns], keptSite{What: x.what, Path: x.path, Line: x.line})
		}
	}
	for _, w := range s.workloads {
		k.Workloads = append(k.Workloads, keptWorkload{Namespace: w.namespace, Who: w.who, Path: w.path, Line: w.line,
			Layer: w.layer, Commit: w.commit, Note: w.note, SA: w.sa, GPUs: w.gpus, Product: w.product,
			Claims: w.claims, Pending: w.pending, Own: w.own})
	}
	for _, x := range s.slicing {
		k.Slicing = append(k.Slicing, keptSlice{Path: x.path, Line: x.line, Layer: x.layer, Commit: x.commit, Note: x.note,
			Resource: x.resource, Replicas: x.replicas})
	}
	for _, x := range s.strategy {
		k.Strategy = append(k.Strategy, keptStrategy{Value: x.value, Path: x.path, Line: x.line})
	}
	return k
}

func (k keptCluster) state() *clusterState {
	s := &clusterState{namespaces: k.Namespaces, managed: k.Managed, denyAll: k.DenyAll, quota: k.Quota, saTeam: k.SATeam, t: k.Tenancy, objects: k.Objects}
	for ns, sites := range k.Foreign {
		initMap(&s.foreign)
		for _, x := range sites {
			s.foreign[ns] = append(s.foreign[ns], siteFact{what: x.What, path: x.Path, line: x.Line})
		}
	}
	for _, w := range k.Workloads {
		s.workloads = append(s.workloads, workloadFact{namespace: w.Namespace, who: w.Who, path: w.Path, line: w.Line,
			layer: w.Layer, commit: w.Commit, note: w.Note, sa: w.SA, gpus: w.GPUs, product: w.Product,
			claims: w.Claims, pending: w.Pending, own: w.Own})
	}
	for _, x := range k.Slicing {
		s.slicing = append(s.slicing, sliceFact{path: x.Path, line: x.Line, layer: x.Layer, commit: x.Commit, note: x.Note,
			resource: x.Resource, replicas: x.Replicas})
	}
	for _, x := range k.Strategy {
		s.strategy = append(s.strategy, strategyFact{value: x.Value, path: x.Path, line: x.Line})
	}
	return s
}

// keepFacts hands one file's facts to scanners.KeepState.
func keepFacts(ctx context.Context, facts *clusterState) {
	if facts.empty() || !scanners.KeepsState(ctx) {
		return
	}
	data, err := json.Marshal(keepCluster(facts))
	if err != nil {
		return // maps of strings and plain structs: cannot fail
	}
	scanners.KeepState(ctx, data)
}

// RestoreState implements scanners.StateKeeper.
func (c *Cluster) RestoreState(_ context.Context, target string, data []byte) error {
	var k keptCluster
	if err := json.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("misconfig cluster state: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.targets[target]
	if st == nil {
		st = &clusterState{}
		c.targets[target] = st
	}
	if !st.merge(k.state()) {
		// Past the bound: the file that crossed it reported so when it was
		// scanned, and its finding is replayed with the others.
		st.full = true
	}
	return nil
}
