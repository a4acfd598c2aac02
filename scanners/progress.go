package scanners

import "context"

// Progress is told how far the walk of each target has got, so that a front
// end can draw it (cmd/mlwarden/cli draws a bar on a terminal).
// Implementations must be safe for concurrent use.
//
// The dispatcher calls Start and Finish around each target's walk and
// Scanned for every artifact handed over. Sources report their own work
// through ProgressOf(ctx) in the unit their target kind counts: files for
// directories, files and hf: targets (Expect only: Scanned counts them
// done), commits for repositories, layers for images. Bytes are what the
// source reads (an image's compressed layers, as fetched).
type Progress interface {
	// Start says that the walk of t begins.
	Start(t Target)
	// Expect adds work the walk knows is ahead (items and bytes; 0 for
	// what is unknown). It may be called many times as the source learns.
	Expect(items, bytes int64)
	// Done counts work of the source's own unit finished.
	Done(items, bytes int64)
	// Scanned counts one artifact of size bytes handed to the checks.
	Scanned(size int64)
	// Finish says that the walk of t is over.
	Finish(t Target)
}

type progressKey struct{}

// ProgressContext returns ctx carrying p, for ProgressOf (the dispatcher
// makes one for each walk; a test of a source can too).
func ProgressContext(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressOf returns the progress that ctx carries (the dispatcher puts its
// own in the context it hands to Source.Walk), or one that does nothing.
func ProgressOf(ctx context.Context) Progress {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok && p != nil {
		return p
	}
	return noProgress{}
}

type noProgress struct{}

func (noProgress) Start(Target)        {}
func (noProgress) Expect(int64, int64) {}
func (noProgress) Done(int64, int64)   {}
func (noProgress) Scanned(int64)       {}
func (noProgress) Finish(Target)       {}

// HasProgress reports whether ctx carries a Progress, so that a source does
// work only progress needs (counting a tree ahead) only when it is drawn.
func HasProgress(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(Progress)
	return ok
}
