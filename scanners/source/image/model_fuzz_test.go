//go:build !mlwarden_sbatch

package image

import (
	"path"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// FuzzModelLayerKind: a layer's media type and annotations are the
// artifact's (hostile) data: whatever they say, a raw layer's name is a
// clean absolute path inside the artifact.
func FuzzModelLayerKind(f *testing.F) {
	f.Add("application/vnd.cncf.model.weight.v1.raw", "model.safetensors", "", `{"name":"x"}`, "")
	f.Add("application/vnd.oci.image.layer.v1.tar", "", "../../etc/passwd", "", "")
	f.Add("application/vnd.docker.ai.gguf.v3", `..\..\x`, "", "", "true")
	f.Add("application/vnd.kitops.modelkit.model.v1.tar+gzip", "", "", `{"name":`, "")
	f.Fuzz(func(t *testing.T, mt, fp, title, meta, unpack string) {
		d := v1.Descriptor{MediaType: types.MediaType(mt), Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)},
			Annotations: map[string]string{AnnotationModelPackPath: fp, AnnotationTitle: title, AnnotationFileMetadata: meta, AnnotationORASUnpack: unpack}}
		raw, name := modelLayerKind(d)
		if !raw {
			return
		}
		if !strings.HasPrefix(name, "/") || path.Clean(name) != name || name == "/" || strings.Contains(name, "/../") {
			t.Fatalf("modelLayerKind(%q, %q, %q, %q) = %q", mt, fp, title, meta, name)
		}
	})
}

func TestModelLayerKind(t *testing.T) {
	cases := []struct {
		mt   string
		ann  map[string]string
		raw  bool
		name string
	}{
		{"application/vnd.cncf.model.weight.v1.raw", map[string]string{AnnotationModelPackPath: "model.safetensors"}, true, "/model.safetensors"},
		{"application/vnd.cncf.model.weight.v1.tar", map[string]string{AnnotationModelPackPath: "weights"}, false, ""},
		{"application/vnd.cncf.model.doc.v1.tar+zstd", nil, false, ""},
		{"application/vnd.cnai.model.weight.v1.raw", map[string]string{AnnotationCNAIPath: "a/b.bin"}, true, "/a/b.bin"},
		{"application/vnd.cncf.model.weight.v1.raw", map[string]string{AnnotationFileMetadata: `{"name":"m.gguf","mode":420}`}, true, "/m.gguf"},
		{"application/vnd.kitops.modelkit.model.v1.tar+gzip", map[string]string{AnnotationTitle: "model"}, false, ""},
		{"application/vnd.docker.ai.gguf.v3", nil, true, "/sha256-" + strings.Repeat("a", 64) + ".gguf"},
		{"application/vnd.docker.ai.vllm.config.tar", nil, false, ""},
		{"application/vnd.oci.image.layer.v1.tar", map[string]string{AnnotationTitle: "model.pt"}, true, "/model.pt"},
		{"application/vnd.oci.image.layer.v1.tar+gzip", map[string]string{AnnotationTitle: "dir", AnnotationORASUnpack: "true"}, false, ""},
		{"application/vnd.oci.image.layer.v1.tar+gzip", nil, false, ""},
		{"application/octet-stream", map[string]string{AnnotationTitle: "../../x.pkl"}, true, "/x.pkl"},
	}
	for _, c := range cases {
		d := v1.Descriptor{MediaType: types.MediaType(c.mt), Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}, Annotations: c.ann}
		raw, name := modelLayerKind(d)
		if raw != c.raw || (raw && name != c.name) {
			t.Errorf("%s %v: raw %v %q, want %v %q", c.mt, c.ann, raw, name, c.raw, c.name)
		}
	}
}
