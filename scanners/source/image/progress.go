package image

import (
	"context"
	"strconv"

	"github.com/mlwarden/mlwarden/scanners"
)

// imgProgress reports an image walk to the run's scanners.Progress (layers
// and compressed bytes, as fetched) and lists the layers as components for
// the bill of materials. All methods work on a nil receiver, which reports
// nothing.
type imgProgress struct {
	ctx context.Context
	p   scanners.Progress
}

func newImgProgress(ctx context.Context) *imgProgress {
	return &imgProgress{ctx: ctx, p: scanners.ProgressOf(ctx)}
}

func (p *imgProgress) addLayers(jobs []*imgLayerJob) {
	if p == nil {
		return
	}
	var total int64
	cs := make([]scanners.Component, 0, len(jobs))
	for _, j := range jobs {
		total += j.size
		c := scanners.Component{Kind: scanners.ComponentLayer, Layer: j.diffID, Size: j.size,
			Properties: map[string]string{"index": strconv.Itoa(j.index)}}
		if j.digest != "" && j.digest != j.diffID {
			c.Properties["blob"] = j.digest
		}
		if j.createdBy != "" {
			c.Properties["created_by"] = j.createdBy
		}
		cs = append(cs, c)
	}
	p.p.Expect(int64(len(jobs)), total)
	scanners.AddComponent(p.ctx, cs...)
}

func (p *imgProgress) add(n int64) {
	if p != nil {
		p.p.Done(0, n)
	}
}

func (p *imgProgress) layerDone(j *imgLayerJob, cached bool) {
	if p == nil {
		return
	}
	if cached {
		p.p.Done(1, j.size) // not fetched: counted whole
		return
	}
	p.p.Done(1, 0)
}

func (p *imgProgress) stop() {}
