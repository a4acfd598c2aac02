package models

import (
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

// TestONNXExternalInside: an external-data location is traversal only when
// it resolves outside the model's directory (as onnx's checker normalises
// it); one with .. that stays inside is not. The models are made by
// internal/hostile.
func TestONNXExternalInside(t *testing.T) {
	for _, c := range []struct {
		loc  string
		want bool // an onnx-external-data-path finding
	}{
		{"weights.bin", false},
		{"./weights.bin", false},
		{"sub/../weights.bin", false},
		{"a/b/../../weights.bin", false},
		{`sub\..\weights.bin`, false},
		{"a/./b/../c/w.bin", false},
		{"w..bin", false},
		{"../weights.bin", true},
		{"a/../../weights.bin", true},
		{`..\weights.bin`, true},
		{"./../x", true},
		{"..", true},
		{"/etc/passwd", true},
		{`C:\Windows\x`, true},
		{"//server/share/x", true},
	} {
		fs, _ := scanHostile(t, New(), "model/model.onnx", hostile.ONNXExternal(c.loc))
		if got := has(fs, "models/onnx-external-data-path", ""); got != c.want {
			t.Errorf("%q: finding %v, want %v: %v", c.loc, got, c.want, fs)
		}
	}
}
