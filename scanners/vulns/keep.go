package vulns

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mlwarden/mlwarden/scanners"
)

// The check's per-target facts (the affected torch release, the torch.load
// calls) are kept with an artifact's findings wherever a source caches them
// (scanners.StateKeeper): a warm rescan of an image whose layers the cache
// replays reports torch.load under an affected torch as a cold one does.

var _ scanners.StateKeeper = (*Scanner)(nil)

// StateName implements scanners.StateKeeper.
func (s *Scanner) StateName() string { return scanners.CheckVulns }

// keptState is what one artifact gave: a torch release or load calls.
type keptState struct {
	Torch *keptPlace `json:"torch,omitempty"`
	Loads []keptLoad `json:"loads,omitempty"`
}

type keptPlace struct {
	A   scanners.KeptArtifact `json:"a"`
	Pkg Package               `json:"pkg"`
}

type keptLoad struct {
	A           scanners.KeptArtifact `json:"a"`
	Line        int                   `json:"line"`
	WeightsOnly bool                  `json:"weights_only,omitempty"`
}

// keep hands what one artifact gave to scanners.KeepState.
func keep(ctx context.Context, torch *place, loads []loadSite) {
	if (torch == nil && len(loads) == 0) || !scanners.KeepsState(ctx) {
		return
	}
	var k keptState
	if torch != nil {
		k.Torch = &keptPlace{A: scanners.Keep(torch.a), Pkg: torch.pkg}
	}
	for _, l := range loads {
		k.Loads = append(k.Loads, keptLoad{A: scanners.Keep(l.a), Line: l.line, WeightsOnly: l.weightsOnly})
	}
	data, err := json.Marshal(k)
	if err != nil {
		return // plain structs: cannot fail
	}
	scanners.KeepState(ctx, data)
}

// RestoreState implements scanners.StateKeeper.
func (s *Scanner) RestoreState(_ context.Context, target string, data []byte) error {
	var k keptState
	if err := json.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("vulns state: %w", err)
	}
	if k.Torch != nil {
		s.addTorch(target, &place{a: k.Torch.A.Artifact(target), pkg: k.Torch.Pkg})
	}
	sites := make([]loadSite, 0, len(k.Loads))
	for _, l := range k.Loads {
		sites = append(sites, loadSite{a: l.A.Artifact(target), line: l.Line, weightsOnly: l.WeightsOnly})
	}
	s.addLoads(target, sites)
	return nil
}
