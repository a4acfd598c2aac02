package cuda

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/suppress"
)

// TargetCheck is the cuda check as `mlwarden cuda check` runs it through the
// pipeline (scan.Options.Scanners): it combines the declarations of all of
// one target's artifacts — an image's config and its files, which a check
// that judges one artifact at a time cannot — and, once the target's walk is
// over, evaluates the combined declaration on every host. Each problem of an
// evaluation is a finding of its cuda rule, located at the declaration, so
// the pipeline's suppressions (ignore entries, baselines) apply to it; an
// inline mlwarden:ignore comment on that line is honoured here, as the
// dispatcher honours it for findings made while an artifact is scanned. The
// evaluations are kept for the front end to print as verdicts (Verdicts).
//
// Its facts are kept with each artifact's result (scanners.StateKeeper), so
// a warm rescan of an image whose layers the cache replays decides as a cold
// one does. What it keeps does not depend on the hosts, so cached results do
// not either.
type TargetCheck struct {
	s   *Scanner
	env *Declared

	mu       sync.Mutex
	targets  map[string][]part // by target name, until FinishTarget
	verdicts []TargetVerdict
}

var _ scanners.StateKeeper = (*TargetCheck)(nil)

// TargetVerdict is what TargetCheck decided for one target.
type TargetVerdict struct {
	Target string
	// Declared is the combined declaration (with --env merged in).
	Declared Declared
	// Evaluations has one entry per host, in the check's host order.
	Evaluations []Evaluation
	// Findings[i][j] is the finding reported for Evaluations[i].Problems[j],
	// as FinishTarget returned it (before the pipeline's suppressions).
	Findings [][]scanners.Finding
}

// part is what one artifact declared.
type part struct {
	a      scanners.KeptArtifact
	d      Declared
	inline []keptInline
}

// PerTarget returns the check that evaluates each target's combined
// declarations on s's hosts; env, when not nil, is merged into every
// target's declarations (an image environment given with --env).
func (s *Scanner) PerTarget(env *Declared) *TargetCheck {
	return &TargetCheck{s: s, env: env, targets: map[string][]part{}}
}

// Check names the check.
func (c *TargetCheck) Check() string { return scanners.CheckCUDA }

// Rules lists the check's rules.
func (c *TargetCheck) Rules() []scanners.Rule { return c.s.Rules() }

// Wants says whether an artifact may declare CUDA (as Scanner.Wants).
func (c *TargetCheck) Wants(a *scanners.Artifact, head []byte) bool { return wants(a, head) }

// Scan reads what a declares and keeps it for FinishTarget; it reports
// nothing itself.
func (c *TargetCheck) Scan(ctx context.Context, a *scanners.Artifact, content scanners.Content) ([]scanners.Finding, error) {
	d, err := Extract(a, content)
	if err != nil {
		return nil, err
	}
	if d.Empty() {
		return nil, nil
	}
	p := part{a: scanners.Keep(*a), d: d, inline: inlineIgnores(a, content, d)}
	c.add(a.Target, p)
	if scanners.KeepsState(ctx) {
		data, err := json.Marshal(keepPart(p))
		if err != nil {
			return nil, fmt.Errorf("cuda state: %w", err)
		}
		scanners.KeepState(ctx, data)
	}
	return nil, nil
}

func (c *TargetCheck) add(target string, p part) {
	c.mu.Lock()
	c.targets[target] = append(c.targets[target], p)
	c.mu.Unlock()
}

// inlineIgnores lists the cuda rules an inline mlwarden:ignore comment
// ignores on a line of a that declares CUDA, with the reason the
// dispatcher's inline suppression (suppress.Inline) gives.
func inlineIgnores(a *scanners.Artifact, content scanners.Content, d Declared) []keptInline {
	if a.Kind != scanners.ArtifactFile {
		return nil
	}
	data, _, err := scanners.ReadAll(content, maxText)
	if err != nil || len(data) == 0 {
		return nil
	}
	var probe []scanners.Finding
	for _, e := range d.Evidence {
		if e.Line <= 0 {
			continue
		}
		for _, r := range ruleList {
			probe = append(probe, scanners.Finding{Path: a.Path, Line: e.Line, RuleID: r.ID})
		}
	}
	suppress.Inline(a, data, probe)
	var out []keptInline
	for _, f := range probe {
		if f.Suppressed != "" {
			out = append(out, keptInline{Line: f.Line, Rule: f.RuleID, Why: f.Suppressed})
		}
	}
	return out
}

// FinishTarget evaluates the target's combined declarations on every host
// and reports each problem as a finding.
func (c *TargetCheck) FinishTarget(_ context.Context, t scanners.Target) ([]scanners.Finding, error) {
	c.mu.Lock()
	parts := c.targets[t.Name]
	delete(c.targets, t.Name)
	c.mu.Unlock()
	// Artifacts are scanned concurrently: merge in a fixed order, the
	// image config first, then by layer and path.
	slices.SortStableFunc(parts, func(x, y part) int {
		return cmp.Or(cmp.Compare(kindOrder(x.a.Kind), kindOrder(y.a.Kind)), cmp.Compare(x.a.LayerIndex, y.a.LayerIndex), cmp.Compare(x.a.Path, y.a.Path))
	})
	var d Declared
	for _, p := range parts {
		d.Merge(p.d)
	}
	if c.env != nil {
		d.Merge(*c.env)
	}
	first := firstEvidence(d)
	a := scanners.Artifact{Kind: scanners.ArtifactFile, Target: t.Name, TargetKind: t.Kind}
	var inline []keptInline
	for _, p := range parts {
		if slices.Contains(p.d.Evidence, first) {
			a, inline = p.a.Artifact(t.Name), p.inline
			break
		}
	}
	v := TargetVerdict{Target: t.Name, Declared: d, Evaluations: c.s.EvaluateAll(d)}
	var out []scanners.Finding
	for i, ev := range v.Evaluations {
		var fs []scanners.Finding
		h := c.s.pools[i].Host // EvaluateAll keeps the hosts' order
		for _, pr := range ev.Problems {
			r := ruleByID(pr.Rule)
			f := scanners.At(&a, r, first.Line, fmt.Sprintf("%s declares CUDA %s (%s); on host %q (driver %s): %s. Fix: %s",
				where(&a, first), orUnknown(ev.DeclaredCUDA), first.What, ev.Host, h.DriverVersion, pr.Reason, r.Fix))
			f.Evidence = first.What
			for _, in := range inline {
				if in.Line == f.Line && in.Rule == f.RuleID {
					f.Suppressed = in.Why
				}
			}
			fs = append(fs, f)
		}
		v.Findings = append(v.Findings, fs)
		out = append(out, fs...)
	}
	c.mu.Lock()
	c.verdicts = append(c.verdicts, v)
	c.mu.Unlock()
	return out, nil
}

func kindOrder(k scanners.ArtifactKind) int {
	if k == scanners.ArtifactImageConfig {
		return 0
	}
	return 1
}

// Verdicts returns the targets decided so far, in the order their walks
// finished (the order of the targets of a run).
func (c *TargetCheck) Verdicts() []TargetVerdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.verdicts)
}

// StateName implements scanners.StateKeeper.
func (c *TargetCheck) StateName() string { return scanners.CheckCUDA }

// RestoreState implements scanners.StateKeeper: a replayed artifact's
// declarations count as if it had been scanned.
func (c *TargetCheck) RestoreState(_ context.Context, target string, data []byte) error {
	var k keptPart
	if err := json.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("cuda state: %w", err)
	}
	c.add(target, k.part())
	return nil
}

// keptPart is a part as the cache keeps it. An image environment is kept as
// its variables (ImageEnv is rebuilt from them).
type keptPart struct {
	A             scanners.KeptArtifact `json:"a"`
	CUDA          string                `json:"cuda,omitempty"`
	Evidence      []Evidence            `json:"evidence,omitempty"`
	Env           map[string]string     `json:"env,omitempty"`
	HasEnv        bool                  `json:"has_env,omitempty"`
	CompatDrivers []string              `json:"compat_drivers,omitempty"`
	Arch          *ArchList             `json:"arch,omitempty"`
	NoPTX         bool                  `json:"no_ptx,omitempty"`
	Undeclared    []Evidence            `json:"undeclared,omitempty"`
	FromImage     bool                  `json:"from_image,omitempty"`
	Inline        []keptInline          `json:"inline,omitempty"`
}

// keptInline is an inline comment that ignores rule on line.
type keptInline struct {
	Line int    `json:"line"`
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

func keepPart(p part) keptPart {
	d := p.d
	k := keptPart{A: p.a, CUDA: d.CUDA, Evidence: d.Evidence, CompatDrivers: d.CompatDrivers, Arch: d.Arch,
		NoPTX: d.NoPTX, Undeclared: d.Undeclared, FromImage: d.FromImage, Inline: p.inline}
	if d.Env != nil {
		k.HasEnv, k.Env = true, d.Env.vars()
	}
	return k
}

func (k keptPart) part() part {
	d := Declared{CUDA: k.CUDA, Evidence: k.Evidence, CompatDrivers: k.CompatDrivers, Arch: k.Arch,
		NoPTX: k.NoPTX, Undeclared: k.Undeclared, FromImage: k.FromImage}
	if k.HasEnv {
		e := imageEnvFromMap(k.Env)
		d.Env = &e
	}
	return part{a: k.A, d: d, inline: k.Inline}
}
