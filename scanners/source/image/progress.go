package image

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// imgProgress draws a one-line progress bar: layers done, bytes read
// (compressed, as fetched) and the rate. All methods work on a nil receiver,
// which draws nothing.
type imgProgress struct {
	w      io.Writer
	start  time.Time
	bytes  atomic.Int64
	total  atomic.Int64
	layers atomic.Int64
	done   atomic.Int64
	cached atomic.Int64
	quit   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

func newImgProgress(w io.Writer) *imgProgress {
	if w == nil {
		return nil
	}
	p := &imgProgress{w: w, start: time.Now(), quit: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.draw()
			case <-p.quit:
				return
			}
		}
	}()
	return p
}

func (p *imgProgress) addLayers(jobs []*imgLayerJob) {
	if p == nil {
		return
	}
	p.layers.Add(int64(len(jobs)))
	for _, j := range jobs {
		p.total.Add(j.size)
	}
}

func (p *imgProgress) add(n int64) {
	if p != nil {
		p.bytes.Add(n)
	}
}

func (p *imgProgress) layerDone(j *imgLayerJob, cached bool) {
	if p == nil {
		return
	}
	p.done.Add(1)
	if cached {
		p.cached.Add(1)
		p.bytes.Add(j.size)
	}
}

func (p *imgProgress) draw() {
	b, t := p.bytes.Load(), p.total.Load()
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(b) / el
	}
	line := fmt.Sprintf("layers %d/%d", p.done.Load(), p.layers.Load())
	if c := p.cached.Load(); c > 0 {
		line += fmt.Sprintf(" (%d cached)", c)
	}
	if t > 0 {
		pct := min(100, 100*float64(b)/float64(t))
		const width = 24
		fill := int(pct / 100 * width)
		bar := make([]byte, width)
		for i := range bar {
			bar[i] = ' '
			if i < fill {
				bar[i] = '='
			}
		}
		line = fmt.Sprintf("[%s] %3.0f%%  %s  %s / %s", bar, pct, line, imgBytes(b), imgBytes(t))
	} else {
		line += "  " + imgBytes(b)
	}
	line += fmt.Sprintf("  %s/s", imgBytes(int64(rate)))
	fmt.Fprintf(p.w, "\r%-100s", line)
}

func (p *imgProgress) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		close(p.quit)
		p.wg.Wait()
		p.draw()
		fmt.Fprintln(p.w)
	})
}

func imgBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
