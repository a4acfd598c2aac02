package models

import (
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestDescribe(t *testing.T) {
	s := &Scanner{}
	var _ scanners.Describer = s
	for _, tc := range []struct {
		path   string
		head   string
		format string // "" when not a model
	}{
		{"model.safetensors", "\x08\x00\x00\x00\x00\x00\x00\x00{}      ", "safetensors"},
		{"weights.pt", "PK\x03\x04rest", "PyTorch (zip)"},
		{"est.pkl", "\x80\x04\x95\x00", "pickle"},
		{"m.gguf", "GGUF\x03\x00\x00\x00", "GGUF"},
		{"model.onnx", "\x08\x07\x12\x04", "ONNX"},
		{"notes.txt", "hello", ""},
		{"data.zip", "PK\x03\x04rest", ""},
		{"site.pth", "import os\n/usr/lib/python3\n", ""},
	} {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: tc.path, Size: int64(len(tc.head))}
		c, ok := s.Describe(a, []byte(tc.head))
		if ok != (tc.format != "") || c.Format != tc.format {
			t.Errorf("%s: %v %q, want %q", tc.path, ok, c.Format, tc.format)
		}
		if ok && (c.Kind != scanners.ComponentModel || c.Name != tc.path) {
			t.Errorf("%s: %+v", tc.path, c)
		}
	}
}
