package scanners

import "io"

// ResultSink is a Sink that also gives back what scanning one artifact
// found, so that a source can cache results by content (an image layer's
// digest) and replay them later without scanning again. The dispatcher's
// sink implements it; sources check for it with a type assertion.
type ResultSink interface {
	Sink
	// ArtifactResult scans like Artifact and returns the findings and errors
	// it recorded for this artifact. They are already recorded: the caller
	// must not record them again.
	ArtifactResult(a *Artifact, r io.Reader) ([]Finding, []Error, error)
	// Replay records findings kept from an earlier scan as if scanners had
	// returned them.
	Replay(fs []Finding)
}

var _ ResultSink = (*sink)(nil)

func (s *sink) ArtifactResult(a *Artifact, r io.Reader) ([]Finding, []Error, error) {
	c := &sink{d: s.d, ctx: s.ctx, sem: s.sem, comps: s.comps, skip: s.skip}
	err := c.Artifact(a, r)
	s.add(c.findings)
	s.mu.Lock()
	s.errs = append(s.errs, c.errs...)
	s.mu.Unlock()
	return c.findings, c.errs, err
}

func (s *sink) Replay(fs []Finding) { s.add(fs) }
