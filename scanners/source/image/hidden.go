package image

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
)

// What a layer's tar entry does to the same path (and below it) in the
// layers under it.
const (
	imgDeleted uint8 = 1 << iota // a whiteout .wh.NAME: NAME and all below it are gone
	imgOpaque                    // .wh..wh..opq in DIR: everything below DIR is gone
	imgFile                      // a non-directory entry: replaces NAME, and all below it
	imgDir                       // a directory entry: replaces a non-directory NAME
)

// imgEvents is one layer's entries that hide paths of the layers below it.
type imgEvents struct{ m map[string]uint8 }

func newImgEvents() *imgEvents { return &imgEvents{m: map[string]uint8{}} }

func (e *imgEvents) add(p string, k uint8) { e.m[p] |= k }

// imgEvent is one entry of imgEvents, as the cache stores it.
type imgEvent struct {
	P string `json:"p"`
	K uint8  `json:"k"`
}

func (e *imgEvents) list() []imgEvent {
	out := make([]imgEvent, 0, len(e.m))
	for p, k := range e.m {
		out = append(out, imgEvent{p, k})
	}
	slices.SortFunc(out, func(a, b imgEvent) int { return strings.Compare(a.P, b.P) })
	return out
}

func imgEventsFrom(l []imgEvent) *imgEvents {
	e := &imgEvents{m: make(map[string]uint8, len(l))}
	for _, x := range l {
		e.m[x.P] |= x.K
	}
	return e
}

// imgHide says which is the lowest layer above that hides a path itself and
// the paths below it (1-based layer numbers; 0: none), and whether by
// deletion or by replacement.
type imgHide struct {
	exact, child       int32
	exactDel, childDel bool
}

// imgHidden is what the layers walked so far (all above the current one)
// hide. The walk goes top-down, so each merge is of a lower layer, whose
// events are nearer to the layers still to come and win.
type imgHidden struct {
	mu sync.Mutex
	m  map[string]imgHide
}

func newImgHidden() *imgHidden { return &imgHidden{m: map[string]imgHide{}} }

// merge adds the events of layer index (0-based).
func (h *imgHidden) merge(index int, ev *imgEvents) {
	if ev == nil {
		return
	}
	n := int32(index + 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, k := range ev.m {
		x := h.m[p]
		if k&(imgDeleted|imgFile|imgDir) != 0 {
			x.exact, x.exactDel = n, k&imgDeleted != 0
		}
		if k&(imgDeleted|imgOpaque|imgFile) != 0 {
			x.child, x.childDel = n, k&(imgDeleted|imgOpaque) != 0
		}
		if x != (imgHide{}) {
			h.m[p] = x
		}
	}
}

// note returns the note for a file at p in a layer below all merged ones,
// or "" when the file is visible in the image.
func (h *imgHidden) note(p string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best int32
	var del bool
	if x, ok := h.m[p]; ok && x.exact != 0 {
		best, del = x.exact, x.exactDel
	}
	for q := p; q != "/" && q != "."; {
		q = path.Dir(q)
		if x, ok := h.m[q]; ok && x.child != 0 && (best == 0 || x.child < best) {
			best, del = x.child, x.childDel
		}
	}
	switch {
	case best == 0:
		return ""
	case del:
		return fmt.Sprintf("deleted in layer %d — still present in the image", best)
	}
	return fmt.Sprintf("replaced in layer %d — the old copy is still present in the image", best)
}
