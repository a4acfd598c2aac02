package cuda

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/scanners"
	ociimage "github.com/mlwarden/mlwarden/scanners/source/image"
)

// TestImageTarget builds a real OCI layout with go-containerregistry (CUDA
// env in the config, a compat library and a PyTorch build in a layer) and
// reads it through the image source and the dispatcher with the per-target
// check, as `mlwarden cuda check oci:DIR` does.
func TestImageTarget(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range map[string]string{
		"usr/local/cuda-13.0/compat/libcuda.so.580.65.06":                    "\x7fELF not really",
		"usr/lib/python3/dist-packages/torch/version.py":                     "__version__ = '2.9.0+cu130'\ncuda: Optional[str] = '13.0'\n",
		"usr/lib/python3/dist-packages/torch-2.9.0+cu130.dist-info/METADATA": "Name: torch\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Env = []string{"CUDA_VERSION=13.0.2", "NVIDIA_REQUIRE_CUDA=" + req130}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	src, err := ociimage.Open(ctx, "oci", dir, ociimage.Options{Platform: "linux/amd64"})
	if err != nil {
		t.Fatal(err)
	}
	c := (&Scanner{}).PerTarget(nil)
	res := scanners.NewDispatcher([]scanners.Scanner{c}).Run(ctx, src)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	vs := c.Verdicts()
	if len(vs) != 1 {
		t.Fatalf("verdicts %+v", vs)
	}
	d := vs[0].Declared
	if d.CUDA != "13.0" || d.Env == nil || len(d.CompatDrivers) != 1 || !d.NoPTX || !d.FromImage {
		t.Fatalf("declared %+v", d)
	}
	tb := table(t)
	for _, tt := range []struct {
		h    HostFacts
		want Verdict
	}{
		{host("535.104.05", "9.0:nvidia"), CompatibleForwardCompat},
		{host("535.104.05", "8.9:geforce"), Incompatible},
		{host("580.65.06", "9.0:nvidia"), Compatible},
		{host("550.54.15", "9.0:nvidia"), Incompatible}, // R550 is not in the requirement
	} {
		if ev := Evaluate(tb, d, "h", tt.h); ev.Verdict != tt.want {
			t.Errorf("driver %s %s: %s, want %s: %v", tt.h.DriverVersion, tt.h.GPUs[0].Brand, ev.Verdict, tt.want, ev.Reasons)
		}
	}
}
