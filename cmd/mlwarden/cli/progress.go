//go:build !mlwarden_sbatch

package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
)

// termProgress draws one bar per target on a terminal (mpb), in the unit
// the target's kind counts: files and bytes for directories, files and hf:
// targets; layers and fetched bytes for images; commits for repositories;
// with an ETA once the total is known. The bar of a finished target is
// removed, so the report that follows starts on a clean line. It uses no
// colour.
type termProgress struct {
	p *mpb.Progress

	mu   sync.Mutex
	bar  *mpb.Bar
	kind scanners.TargetKind
	// The source's own unit (layers, commits, or files expected) and the
	// artifacts scanned.
	items, wantItems, bytes, wantBytes int64
	files, fileBytes                   int64
}

// newTermProgress draws on w, which must be a terminal (opts: a test's
// mpb.ForceTTY).
func newTermProgress(w io.Writer, opts ...mpb.ContainerOption) *termProgress {
	opts = append([]mpb.ContainerOption{mpb.WithOutput(w), mpb.WithAutoRefresh(), mpb.WithRefreshRate(150 * time.Millisecond)}, opts...)
	return &termProgress{p: mpb.New(opts...)}
}

// Wait ends the drawing; call it before writing the report.
func (t *termProgress) Wait() { t.p.Wait() }

func (t *termProgress) Start(tg scanners.Target) {
	t.mu.Lock()
	t.kind = tg.Kind
	t.items, t.wantItems, t.bytes, t.wantBytes, t.files, t.fileBytes = 0, 0, 0, 0, 0, 0
	t.mu.Unlock()
	name := reports.Escape(tg.Name)
	if r := []rune(name); len(r) > 40 {
		name = "…" + string(r[len(r)-39:])
	}
	// Made without t.mu held: drawing reads the counts under it.
	b := t.p.New(0, mpb.BarStyle().Lbound("[").Rbound("]"),
		mpb.PrependDecorators(decor.Name(name+" ", decor.WC{C: decor.DindentRight})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return t.text() }),
			decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO, decor.WC{W: 8}), "")),
		mpb.BarWidth(24), mpb.BarRemoveOnComplete())
	t.mu.Lock()
	t.bar = b
	t.mu.Unlock()
}

// text is the counts after the bar.
func (t *termProgress) text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	of := func(n, total int64, unit string) string {
		if total > 0 {
			return fmt.Sprintf("%d/%d %s", n, total, unit)
		}
		return fmt.Sprintf("%d %s", n, unit)
	}
	switch t.kind {
	case scanners.KindImage:
		return fmt.Sprintf(" %s  %s  %d files ", of(t.items, t.wantItems, "layers"), bytesOf(t.bytes, t.wantBytes), t.files)
	case scanners.KindRepo:
		return fmt.Sprintf(" %s  %d files ", of(t.items, t.wantItems, "commits"), t.files)
	}
	return fmt.Sprintf(" %s  %s ", of(t.files, t.wantItems, "files"), bytesOf(t.fileBytes, t.wantBytes))
}

func bytesOf(n, total int64) string {
	if total > 0 {
		return fmt.Sprintf("%.1f/%.1f MiB", float64(n)/(1<<20), float64(total)/(1<<20))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// moved returns the bar and where to move it: what is done of the unit
// whose total is known. Called with t.mu held; the bar is moved after it is
// released (the bar's drawing reads the counts under t.mu).
func (t *termProgress) moved() (b *mpb.Bar, cur, total int64) {
	switch t.kind {
	case scanners.KindImage:
		cur, total = t.bytes, t.wantBytes
	case scanners.KindRepo:
		cur, total = t.items, t.wantItems
	default:
		cur, total = t.fileBytes, t.wantBytes
	}
	return t.bar, cur, total
}

func move(b *mpb.Bar, cur, total int64) {
	if b != nil && total > 0 {
		b.SetTotal(max(total, cur+1), false) // complete only at Finish
		b.SetCurrent(cur)
	}
}

func (t *termProgress) Expect(items, bytes int64) {
	t.mu.Lock()
	t.wantItems += items
	t.wantBytes += bytes
	b, cur, total := t.moved()
	t.mu.Unlock()
	move(b, cur, total)
}

func (t *termProgress) Done(items, bytes int64) {
	t.mu.Lock()
	t.items += items
	t.bytes += bytes
	b, cur, total := t.moved()
	t.mu.Unlock()
	move(b, cur, total)
}

func (t *termProgress) Scanned(size int64) {
	t.mu.Lock()
	t.files++
	t.fileBytes += size
	b, cur, total := t.moved()
	t.mu.Unlock()
	move(b, cur, total)
}

func (t *termProgress) Finish(scanners.Target) {
	t.mu.Lock()
	b := t.bar
	t.bar = nil
	t.mu.Unlock()
	if b != nil {
		b.SetTotal(-1, true)
		b.Wait()
	}
}
