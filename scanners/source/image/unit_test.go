package image

import (
	"bytes"
	"strings"
	"testing"
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

func TestImageProgress(t *testing.T) {
	var buf bytes.Buffer
	p := newImgProgress(&buf)
	p.addLayers([]*imgLayerJob{{size: 2 << 20}, {size: 2 << 20}})
	p.add(1 << 20)
	p.layerDone(&imgLayerJob{size: 2 << 20}, true)
	p.stop()
	out := buf.String()
	if !strings.Contains(out, "layers 1/2 (1 cached)") || !strings.Contains(out, "3.0 MiB / 4.0 MiB") || !strings.HasSuffix(out, "\n") {
		t.Errorf("progress: %q", out)
	}
	var nilp *imgProgress
	nilp.add(1)
	nilp.stop()
}
