//go:build !mlwarden_sbatch

package image

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestImageInsecureRegistry(t *testing.T) {
	for _, tc := range []struct {
		ref      string
		insecure []string
		scheme   string
	}{
		{"registry.test:5000/a/b:1", nil, "https"},
		{"registry.test:5000/a/b:1", []string{"registry.test:5000"}, "http"},
		{"registry.test:5000/a/b:1", []string{"other.test"}, "https"},
		{"127.0.0.1:5000/a/b:1", nil, "http"},
		{"localhost:5000/a/b:1", nil, "http"},
	} {
		r, err := imgParseRef(tc.ref, tc.insecure)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Context().Scheme(); got != tc.scheme {
			t.Errorf("%s %v: %s, want %s", tc.ref, tc.insecure, got, tc.scheme)
		}
	}
}

func TestImageHiddenNotes(t *testing.T) {
	// Layers (1-based): 2 deletes /a/x and makes /o opaque; 3 replaces
	// /r with a file and /d with a symlink; 4 writes a dir at /f; 5 deletes
	// /a (above 2's deletion of /a/x: the nearest wins).
	h := newImgHidden()
	ev := func(kv ...any) *imgEvents {
		e := newImgEvents()
		for i := 0; i < len(kv); i += 2 {
			e.add(kv[i].(string), kv[i+1].(uint8))
		}
		return e
	}
	h.merge(4, ev("/a", imgDeleted))
	h.merge(3, ev("/f", imgDir))
	h.merge(2, ev("/r", imgFile, "/d", imgFile))
	h.merge(1, ev("/a/x", imgDeleted, "/o", imgOpaque|imgDir))
	for _, tc := range []struct{ path, want string }{
		{"/a/x", "deleted in layer 2 — still present in the image"},
		{"/a/y", "deleted in layer 5 — still present in the image"},
		{"/a/x/deeper", "deleted in layer 2 — still present in the image"},
		{"/o/file", "deleted in layer 2 — still present in the image"},
		{"/o", "replaced in layer 2 — the old copy is still present in the image"},
		{"/r", "replaced in layer 3 — the old copy is still present in the image"},
		{"/d/under", "replaced in layer 3 — the old copy is still present in the image"},
		{"/f", "replaced in layer 4 — the old copy is still present in the image"},
		{"/f/child", ""},
		{"/visible", ""},
	} {
		if got := h.note(tc.path); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.path, got, tc.want)
		}
	}
}

// progressRecorder sums what a walk reports.
type progressRecorder struct{ items, bytes, wantItems, wantBytes atomic.Int64 }

func (r *progressRecorder) Start(scanners.Target)  {}
func (r *progressRecorder) Scanned(int64)          {}
func (r *progressRecorder) Finish(scanners.Target) {}
func (r *progressRecorder) Expect(items, bytes int64) {
	r.wantItems.Add(items)
	r.wantBytes.Add(bytes)
}
func (r *progressRecorder) Done(items, bytes int64) {
	r.items.Add(items)
	r.bytes.Add(bytes)
}

func TestImageProgress(t *testing.T) {
	rec := &progressRecorder{}
	p := newImgProgress(scanners.ProgressContext(context.Background(), rec))
	p.addLayers([]*imgLayerJob{{size: 2 << 20, diffID: "sha256:a"}, {index: 1, size: 2 << 20, diffID: "sha256:b"}})
	p.add(1 << 20)
	p.layerDone(&imgLayerJob{size: 2 << 20}, true)
	p.stop()
	if rec.wantItems.Load() != 2 || rec.wantBytes.Load() != 4<<20 || rec.items.Load() != 1 || rec.bytes.Load() != 3<<20 {
		t.Errorf("progress: %d/%d layers, %d/%d bytes", rec.items.Load(), rec.wantItems.Load(), rec.bytes.Load(), rec.wantBytes.Load())
	}
	var nilp *imgProgress
	nilp.add(1)
	nilp.stop()
}

// TestDefaultSpill: layers fetched ahead spill to a ring only when there
// are cores beyond the two the walked layer keeps busy.
func TestDefaultSpill(t *testing.T) {
	for procs, want := range map[int]int64{1: -1, 2: -1, 3: imgSpillBytes, 16: imgSpillBytes} {
		if got := defaultSpill(procs); got != want {
			t.Errorf("defaultSpill(%d) = %d, want %d", procs, got, want)
		}
	}
}
