package scanners

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"sync"
)

// ResultSink is a Sink that also gives back what scanning one artifact
// gave, so that a source can cache it by content (an image layer's digest)
// and replay it later without scanning again. The dispatcher's sink
// implements it; sources check for it with a type assertion.
type ResultSink interface {
	Sink
	// ArtifactResult scans like Artifact and returns what it recorded for
	// this artifact. It is already recorded: the caller must not record it
	// again.
	ArtifactResult(a *Artifact, r io.Reader) (Record, error)
	// Replay records what earlier scans of artifacts of target recorded, as
	// if scanners had just returned it: its findings and components (moved
	// to target), its skips, and each check's kept state, handed back to
	// the check (StateKeeper.RestoreState) before the target is finished.
	Replay(target string, rec Record)
}

// Record is what scanning one or more artifacts gave: everything that
// reaches the report from them, so that replaying a Record gives the same
// report as scanning again. A source that caches by content stores it
// (without Errors: an artifact with errors is never cached).
type Record struct {
	Findings []Finding
	Errors   []Error
	// States are what checks that judge whole targets kept from these
	// artifacts for FinishTarget (StateKeeper, KeepState).
	States []State
	// Components are what the artifacts are, for a bill of materials.
	Components []Component
	// Skipped are the paths --skip-files and --skip-dirs left out.
	Skipped []string
	// FS is never stored: a source that replays a record into a target
	// whose artifacts have a file system (Artifact.FS: a Hub repository)
	// sets it to that file system, and RestoreState finds it with
	// ReplayFS, so that a check that judges the target from restored facts
	// (the signatures check's manifests) reads the files they name even
	// when no artifact of the target was scanned in this run.
	FS fs.FS `json:"-"`
}

// Append adds o to r.
func (r *Record) Append(o Record) {
	r.Findings = append(r.Findings, o.Findings...)
	r.Errors = append(r.Errors, o.Errors...)
	r.States = append(r.States, o.States...)
	r.Components = append(r.Components, o.Components...)
	r.Skipped = append(r.Skipped, o.Skipped...)
}

// State is what one check kept from one artifact for FinishTarget, in the
// check's own encoding.
type State struct {
	// Check is the StateKeeper's StateName.
	Check string `json:"check"`
	Data  []byte `json:"data"`
}

// StateKeeper is implemented by a TargetFinisher whose judgement of a
// target rests on facts it keeps from the target's artifacts: the vulns
// check's torch release and torch.load calls, misconfig.Cluster's
// namespaces and workloads. A source that replays an artifact's findings
// from a cache would hide those facts from FinishTarget, and a warm rescan
// would miss what a cold one finds. So, while it scans an artifact, such a
// check also hands the facts that artifact gave it to KeepState; the
// dispatcher returns them with the artifact's findings (ResultSink), the
// cache stores them beside the findings, and Replay gives them back through
// RestoreState, as if Scan had seen the artifact again.
//
// A TargetFinisher that keeps facts from Scan must implement it; one that
// judges only the Target (pins' Hub revision rule) or keeps nothing from
// artifacts a cache replays need not.
type StateKeeper interface {
	TargetFinisher
	// StateName names the check's state in caches: unique among the
	// checks of a run. The encoding is the build's own: caches are keyed
	// by the rules version, which names the build.
	StateName() string
	// RestoreState adds state that KeepState recorded while an artifact of
	// an earlier target was scanned to what the check keeps for target,
	// as if it had scanned that artifact in target. Data it cannot read is
	// an error. ReplayFS(ctx) is the target's file system, when it has one.
	RestoreState(ctx context.Context, target string, data []byte) error
}

type stateKey struct{}

type replayFSKey struct{}

// ReplayFS is the file system of the target a record is replayed into
// (Record.FS), in the context RestoreState is called with; nil when the
// target has none (an image) or the source did not say.
func ReplayFS(ctx context.Context) fs.FS {
	f, _ := ctx.Value(replayFSKey{}).(fs.FS)
	return f
}

// stateRecorder collects the states one artifact's checks keep.
type stateRecorder struct {
	name string
	rec  *recording
}

// recording is what a sink records for ArtifactResult.
type recording struct {
	mu      sync.Mutex
	states  []State
	skipped []string
}

// KeepsState reports whether a state handed to KeepState with ctx is kept:
// a check encodes its facts only then.
func KeepsState(ctx context.Context) bool {
	r, _ := ctx.Value(stateKey{}).(*stateRecorder)
	return r != nil
}

// KeepState records data, a StateKeeper's encoding of the facts the
// artifact being scanned gave it, when ctx is the one the dispatcher handed
// to Scan for an artifact whose result a source keeps (else it does
// nothing).
func KeepState(ctx context.Context, data []byte) {
	r, _ := ctx.Value(stateKey{}).(*stateRecorder)
	if r == nil || len(data) == 0 {
		return
	}
	r.rec.mu.Lock()
	r.rec.states = append(r.rec.states, State{Check: r.name, Data: data})
	r.rec.mu.Unlock()
}

var _ ResultSink = (*sink)(nil)

func (s *sink) ArtifactResult(a *Artifact, r io.Reader) (Record, error) {
	rec := &recording{}
	c := &sink{d: s.d, sem: s.sem, comps: &components{}, skip: s.skip, rec: rec}
	c.ctx = context.WithValue(s.ctx, componentsKey{}, c.comps)
	err := c.Artifact(a, r)
	c.comps.mu.Lock()
	comps := c.comps.list
	c.comps.mu.Unlock()
	AddComponent(s.ctx, comps...)
	s.add(c.findings)
	s.mu.Lock()
	s.errs = append(s.errs, c.errs...)
	s.mu.Unlock()
	return Record{Findings: c.findings, Errors: c.errs, States: rec.states, Components: comps, Skipped: rec.skipped}, err
}

func (s *sink) Replay(target string, rec Record) {
	fs := make([]Finding, len(rec.Findings))
	for i, f := range rec.Findings {
		f.Target = target
		fs[i] = f
	}
	s.add(fs)
	cs := make([]Component, len(rec.Components))
	for i, c := range rec.Components {
		c.Target = target
		cs[i] = c
	}
	AddComponent(s.ctx, cs...)
	s.mu.Lock()
	s.errs = append(s.errs, rec.Errors...)
	s.mu.Unlock()
	if s.skip != nil {
		for _, p := range rec.Skipped {
			s.skip.count(clean(p), false)
		}
	}
	ctx := s.ctx
	if rec.FS != nil {
		ctx = context.WithValue(ctx, replayFSKey{}, rec.FS)
	}
	for _, st := range rec.States {
		k := s.d.keeper(st.Check)
		if k == nil {
			// The rules version names the enabled checks: a state of a
			// check this run does not have cannot be in its cache.
			s.Error(Error{Target: target, Message: fmt.Sprintf("cached result: state of unknown check %q", st.Check)})
			continue
		}
		if err := k.RestoreState(ctx, target, st.Data); err != nil {
			s.Error(Error{Target: target, Message: fmt.Sprintf("cached result: %s: %v", st.Check, err)})
		}
	}
}

// keeper returns the enabled StateKeeper named name.
func (d *Dispatcher) keeper(name string) StateKeeper {
	for _, sc := range d.scanners {
		if k, ok := sc.(StateKeeper); ok && k.StateName() == name {
			return k
		}
	}
	return nil
}
