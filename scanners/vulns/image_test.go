package vulns

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

// layer builds an uncompressed layer tar of the files, as a build would
// write them.
func layer(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImageLayers builds a real OCI layout with go-containerregistry: a
// base layer with the toolkit's dpkg packages, a distroless status.d
// entry, and a layer with torch's dist-info and the application calling
// torch.load, and scans it through the image source and the dispatcher.
func TestImageLayers(t *testing.T) {
	layers := [][]byte{
		layer(t, map[string]string{
			"var/lib/dpkg/status":                    dpkgStatus(append([][3]string{{"libc6", "2.36-9+deb12u7", ""}}, toolkitParas("1.17.3-1")...)...),
			"var/lib/dpkg/status.d/cuda-drivers-550": dpkgStatus([3]string{"cuda-drivers-550", "550.90.07-1", ""}),
		}),
		layer(t, map[string]string{
			"usr/local/lib/python3.11/dist-packages/torch-2.5.1+cu124.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+cu124\n",
			"usr/local/lib/python3.11/dist-packages/torch/serialization.py":               "def f():\n    return torch.load(x)\n",
			"app/serve.py": "import torch\nmodel = torch.load('/models/m.pt', weights_only=True)\n",
		}),
	}
	img := empty.Image
	for _, l := range layers {
		data := l
		lay, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, lay); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
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
	src, err := ociimage.Open(ctx, "oci", dir, ociimage.Options{Platform: "linux/amd64", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	res := scanners.NewDispatcher([]scanners.Scanner{newScanner(t)}).Run(ctx, src)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	for _, w := range []struct{ rule, path, adv string }{
		{RuleContainerToolkit, "/var/lib/dpkg/status", "CVE-2025-23359"},
		{RuleContainerToolkit, "/var/lib/dpkg/status", "CVE-2025-23266"},
		{RuleGPUDriver, "/var/lib/dpkg/status.d/cuda-drivers-550", "NVIDIA-5586"},
		{RulePythonPackage, "/usr/local/lib/python3.11/dist-packages/torch-2.5.1+cu124.dist-info/METADATA", "CVE-2025-32434"},
		{RuleTorchLoadWeights, "/app/serve.py", "CVE-2025-32434"},
	} {
		if !has(res.Findings, w.rule, w.path, w.adv) {
			t.Errorf("no %s %s %s in:\n%v", w.rule, w.path, w.adv, hits(res.Findings))
		}
	}
	for _, f := range res.Findings {
		if f.Layer == "" {
			t.Errorf("%s %s: no layer", f.RuleID, f.Path)
		}
		if f.RuleID == RuleTorchLoadWeights && f.Path != "/app/serve.py" {
			t.Errorf("torch.load in library code joined: %s", f.Path)
		}
	}
}
