//go:build !mlwarden_sbatch

package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// A model's files, from the models check's fixtures (written by torch,
// numpy, joblib, GGUF and safetensors writers) and the small files of a
// model repository.
var modelFiles = []string{
	"malicious/torch_zip_os_system.pt", "malicious/os_system_p2.pkl", "malicious/joblib_os_system.joblib",
	"malicious/gguf_ssti.gguf", "malicious/keras_lambda.keras", "malicious/safetensors_overlap.safetensors",
	"benign/state_dict.pt", "benign/llama.gguf", "benign/weights.safetensors", "benign/array.npy",
}

// fakeToken is a credential-shaped string made at test time.
func fakeToken(seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := []byte("hf_")
	for range 34 {
		b = append(b, letters[rng.IntN(len(letters))])
	}
	return string(b)
}

// modelDir writes the files under dir (weights at the top, as a model
// artifact unpacks them) and returns them by relative path.
func modelDir(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{
		"README.md":             []byte("# model\n\nexport HF_TOKEN=" + fakeToken(3) + "\n"),
		"code/train.py":         []byte("import torch\nstate = torch.load('model.pt')\n"),
		"code/requirements.txt": []byte("torch>=2\n"),
		"LICENSE":               []byte("Apache-2.0\n"),
	}
	for _, f := range modelFiles {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "fixtures", "models", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(f)] = data
	}
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

// tarOf is a tar of files (sorted), gzip-compressed when gz is set.
func tarOf(t *testing.T, files map[string][]byte, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var tw *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		tw = tar.NewWriter(zw)
	} else {
		tw = tar.NewWriter(&buf)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
	for _, n := range names {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg})
		tw.Write(files[n])
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

// blob is one layer or config of an artifact.
type blob struct {
	mt   string
	data []byte
	ann  map[string]string
}

func (b blob) desc() v1.Descriptor {
	sum := sha256.Sum256(b.data)
	return v1.Descriptor{MediaType: types.MediaType(b.mt), Size: int64(len(b.data)),
		Digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}, Annotations: b.ann}
}

// artifact is a manifest and its blobs.
type artifact struct {
	artifactType string
	config       blob
	layers       []blob
}

func (a artifact) manifest() []byte {
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: a.artifactType, Config: a.config.desc()}
	for _, l := range a.layers {
		m.Layers = append(m.Layers, l.desc())
	}
	out, _ := json.Marshal(m)
	return out
}

// rawManifest is a manifest pushed as it is.
type rawManifest struct{ data []byte }

func (r rawManifest) RawManifest() ([]byte, error) { return r.data, nil }

func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// push writes a's blobs and manifest to ref with go-containerregistry.
func (a artifact) push(t *testing.T, ref string) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range append([]blob{a.config}, a.layers...) {
		if err := remote.WriteLayer(r.Context(), static.NewLayer(b.data, types.MediaType(b.mt))); err != nil {
			t.Fatal(err)
		}
	}
	if err := remote.Put(r, rawManifest{a.manifest()}); err != nil {
		t.Fatal(err)
	}
}

// layout writes a into an OCI image layout.
func (a artifact) layout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range append([]blob{a.config}, a.layers...) {
		if err := p.WriteBlob(b.desc().Digest, ioNop(b.data)); err != nil {
			t.Fatal(err)
		}
	}
	m := a.manifest()
	sum := sha256.Sum256(m)
	h := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	if err := p.WriteBlob(h, ioNop(m)); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendDescriptor(v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: int64(len(m)), Digest: h, ArtifactType: a.artifactType}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The artifacts of the four producers, each holding files.
func modelPack(t *testing.T, files map[string][]byte) artifact {
	cfg, _ := json.Marshal(map[string]any{"descriptor": map[string]any{"name": "m"}, "modelfs": map[string]any{"type": "layers", "diffIds": []string{}}, "config": map[string]any{"format": "safetensors"}})
	a := artifact{artifactType: image.MediaModelPackManifest, config: blob{mt: image.MediaModelPackConfig, data: cfg}}
	code, docs := map[string][]byte{}, map[string][]byte{}
	for p, data := range files {
		switch {
		case strings.HasPrefix(p, "code/"):
			code[p] = data
		case p == "README.md" || p == "LICENSE":
			docs[p] = data
		default:
			a.layers = append(a.layers, blob{mt: "application/vnd.cncf.model.weight.v1.raw", data: data, ann: map[string]string{image.AnnotationModelPackPath: p}})
		}
	}
	sortLayers(a.layers)
	a.layers = append(a.layers,
		blob{mt: "application/vnd.cncf.model.code.v1.tar", data: tarOf(t, code, false), ann: map[string]string{image.AnnotationModelPackPath: "code"}},
		blob{mt: "application/vnd.cncf.model.doc.v1.tar+gzip", data: tarOf(t, docs, true)})
	return a
}

func kitOps(t *testing.T, files map[string][]byte) artifact {
	cfg, _ := json.Marshal(map[string]any{"manifestVersion": "1.0.0", "package": map[string]any{"name": "m"}, "model": map[string]any{"name": "m", "path": "."}})
	model, code, docs := map[string][]byte{}, map[string][]byte{}, map[string][]byte{}
	for p, data := range files {
		switch {
		case strings.HasPrefix(p, "code/"):
			code[p] = data
		case p == "README.md" || p == "LICENSE":
			docs[p] = data
		default:
			model[p] = data
		}
	}
	return artifact{config: blob{mt: image.MediaKitOpsConfig, data: cfg}, layers: []blob{
		{mt: "application/vnd.kitops.modelkit.model.v1.tar+gzip", data: tarOf(t, model, true)},
		{mt: "application/vnd.kitops.modelkit.code.v1.tar+gzip", data: tarOf(t, code, true)},
		{mt: "application/vnd.kitops.modelkit.docs.v1.tar+gzip", data: tarOf(t, docs, true)},
	}}
}

func dockerModel(t *testing.T, files map[string][]byte) artifact {
	cfg, _ := json.Marshal(map[string]any{"config": map[string]any{"format": "gguf"}, "descriptor": map[string]any{}, "rootfs": map[string]any{"type": "rootfs", "diff_ids": []string{}}})
	a := artifact{config: blob{mt: image.MediaDockerModelConfig, data: cfg}}
	var dirs = map[string][]byte{}
	for p, data := range files {
		mt := "application/vnd.docker.ai.model.file"
		switch {
		case strings.HasSuffix(p, ".gguf"):
			mt = "application/vnd.docker.ai.gguf.v3"
		case strings.HasSuffix(p, ".safetensors"):
			mt = "application/vnd.docker.ai.safetensors"
		case p == "LICENSE":
			mt = "application/vnd.docker.ai.license"
		case strings.HasPrefix(p, "code/"):
			dirs[p] = data
			continue
		}
		a.layers = append(a.layers, blob{mt: mt, data: data, ann: map[string]string{image.AnnotationModelPackPath: p}})
	}
	sortLayers(a.layers)
	a.layers = append(a.layers, blob{mt: "application/vnd.docker.ai.dir.tar", data: tarOf(t, dirs, false)})
	return a
}

func oras(t *testing.T, files map[string][]byte) artifact {
	a := artifact{artifactType: "application/vnd.example.model.v1", config: blob{mt: image.MediaOCIEmpty, data: []byte("{}")}}
	code := map[string][]byte{}
	for p, data := range files {
		if strings.HasPrefix(p, "code/") {
			code[p] = data
			continue
		}
		a.layers = append(a.layers, blob{mt: "application/vnd.oci.image.layer.v1.tar", data: data, ann: map[string]string{image.AnnotationTitle: p}})
	}
	sortLayers(a.layers)
	a.layers = append(a.layers, blob{mt: "application/vnd.oci.image.layer.v1.tar+gzip", data: tarOf(t, code, true),
		ann: map[string]string{image.AnnotationTitle: "code", image.AnnotationORASUnpack: "true"}})
	return a
}

func sortLayers(ls []blob) {
	sort.Slice(ls, func(i, j int) bool { return fmt.Sprint(ls[i].ann) < fmt.Sprint(ls[j].ann) })
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func ioNop(b []byte) nopCloser { return nopCloser{bytes.NewReader(b)} }

// run scans targets with the checks that read files (signatures judge an
// artifact as an image: by its cosign signature, not by files beside the
// weights).
func run(t *testing.T, targets ...string) *scanners.Result {
	t.Helper()
	sc, err := scan.New(scan.Options{Checks: []string{"secrets", "pins", "models", "misconfig"}, Image: image.Options{NoCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var ts []scan.Target
	for _, x := range targets {
		ts = append(ts, scan.Target{Ref: x})
	}
	res, err := sc.Run(context.Background(), ts...)
	if err != nil {
		t.Fatal(err)
	}
	return res.Result
}

type key struct{ rule, path, sev, msg string }

// keysOf are target's findings, an artifact's absolute paths made
// relative as on disk.
func keysOf(res *scanners.Result, target string) []key {
	var out []key
	for _, f := range res.Findings {
		if f.Target != target {
			continue
		}
		p := strings.TrimPrefix(f.Path, "/")
		msg := strings.ReplaceAll(f.Message, f.Path, p)
		// The secrets check says where the file is: in an image.
		msg = strings.ReplaceAll(msg, "anyone who can read this image", "anyone who can read this file")
		out = append(out, key{f.RuleID, p, f.Severity.String(), msg})
	}
	slices.SortFunc(out, func(a, b key) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return out
}

// TestModelArtifactsSameFindingsAsDisk is the "done when" for OCI
// model artifacts: a ModelPack, a KitOps ModelKit, a Docker model and an
// ORAS artifact holding a model's files, pushed to the loopback registry
// (and a ModelPack in an OCI layout), report what the files report on disk.
func TestModelArtifactsSameFindingsAsDisk(t *testing.T) {
	dir, files := modelDir(t)
	host := registrytest.Any(t)
	kinds := []struct {
		name   string
		make   func(*testing.T, map[string][]byte) artifact
		format string
	}{
		{"modelpack", modelPack, "CNCF ModelPack (artifactType application/vnd.cncf.model.manifest.v1+json)"},
		{"kitops", kitOps, "KitOps ModelKit (config application/vnd.kitops.modelkit.config.v1+json)"},
		{"docker", dockerModel, "Docker model (config application/vnd.docker.ai.model.config.v0.1+json)"},
		{"oras", oras, "OCI artifact (artifactType application/vnd.example.model.v1, config application/vnd.oci.empty.v1+json)"},
	}
	var targets []string
	for _, k := range kinds {
		ref := registrytest.Repo(t, host) + ":" + k.name
		k.make(t, files).push(t, ref)
		targets = append(targets, "registry:"+ref)
	}
	lay := "oci:" + modelPack(t, files).layout(t)
	targets = append(targets, lay, dir)
	res := run(t, targets...)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	want := keysOf(res, dir)
	if len(want) < 10 {
		t.Fatalf("only %d findings on disk", len(want))
	}
	for i, tg := range targets[:len(targets)-1] {
		name := strings.TrimPrefix(tg, "registry:")
		got := keysOf(res, name)
		if !slices.Equal(got, want) {
			for _, k := range got {
				if !slices.Contains(want, k) {
					t.Errorf("%s: extra   %+v", tg, k)
				}
			}
			for _, k := range want {
				if !slices.Contains(got, k) {
					t.Errorf("%s: missing %+v", tg, k)
				}
			}
		}
		var notes string
		for _, x := range res.Targets {
			if x.Name == name {
				notes = strings.Join(x.Notes, "\n")
			}
		}
		format := kinds[min(i, len(kinds)-1)].format
		if i == len(kinds) {
			format = kinds[0].format
		}
		if !strings.Contains(notes, "OCI model artifact, "+format) {
			t.Errorf("%s: notes %q, want the format %q", tg, notes, format)
		}
	}
}

// TestModelPackBytes: a ModelPack artifact's raw weight layers are read
// in place, in ranges: a safetensors layer costs its header, a PyTorch
// checkpoint its directory and pickle; the note says what was downloaded,
// and --download-limit bounds it (an error, exit 2, and a note).
func TestModelPackBytes(t *testing.T) {
	dir := t.TempDir()
	if err := hubtest.SparseSafetensors(filepath.Join(dir, "model.safetensors"), 48<<20, 31); err != nil {
		t.Fatal(err)
	}
	if _, err := hubtest.InflateCheckpoint(filepath.Join("..", "hf", "testdata", "checkpoint.pt"), filepath.Join(dir, "pytorch_model.bin"), 16<<20); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, n := range []string{"model.safetensors", "pytorch_model.bin"} {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		files[n] = data
	}
	files["config.json"] = []byte(`{"model_type": "llama"}`)
	// The same files on disk: the config makes both a model directory.
	if err := os.WriteFile(filepath.Join(dir, "config.json"), files["config.json"], 0o644); err != nil {
		t.Fatal(err)
	}
	host := registrytest.Any(t)
	ref := registrytest.Repo(t, host) + ":v1"
	a := artifact{artifactType: image.MediaModelPackManifest, config: blob{mt: image.MediaModelPackConfig, data: []byte(`{"descriptor":{}}`)}}
	var total int64
	for _, n := range []string{"config.json", "model.safetensors", "pytorch_model.bin"} {
		a.layers = append(a.layers, blob{mt: "application/vnd.cncf.model.weight.v1.raw", data: files[n], ann: map[string]string{image.AnnotationModelPackPath: n}})
		total += int64(len(files[n]))
	}
	a.push(t, ref)
	res := run(t, "registry:"+ref, dir)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	if got, want := keysOf(res, ref), keysOf(res, dir); !slices.Equal(got, want) {
		t.Errorf("findings %+v, on disk %+v", got, want)
	}
	notes := ""
	for _, x := range res.Targets {
		if x.Name == ref {
			notes = strings.Join(x.Notes, "\n")
		}
	}
	t.Logf("notes: %s", notes)
	var used int64
	var unit string
	var f float64
	if i := strings.Index(notes, "downloaded "); i >= 0 {
		fmt.Sscanf(notes[i:], "downloaded %f %s", &f, &unit)
	}
	switch unit {
	case "KiB":
		used = int64(f * 1024)
	case "MiB":
		used = int64(f * 1024 * 1024)
	case "B":
		used = int64(f)
	default:
		t.Fatalf("no download figure in the notes: %q", notes)
	}
	// The text checks read the safetensors header as text (16 MiB at
	// most); the rest is headers and the checkpoint's pickle.
	if used > 17<<20 || used > total/2 {
		t.Errorf("downloaded %d of %d bytes", used, total)
	}
	if !strings.Contains(notes, "2 raw layer(s) were read in part") {
		t.Errorf("notes do not say which layers were read in part: %q", notes)
	}

	// A limit below what the checks read: errors, a note, exit 2.
	sc, err := scan.New(scan.Options{Checks: []string{"models"}, Image: image.Options{NoCache: true, DownloadLimit: 8 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	lim, err := sc.Run(context.Background(), scan.Target{Ref: "registry:" + ref})
	if err != nil {
		t.Fatal(err)
	}
	if scan.ExitCode(lim.Result, nil) != scan.ExitError || len(lim.Errors) == 0 || !strings.Contains(lim.Errors[0].Message, "--download-limit 8.0 KiB") {
		t.Errorf("with an 8 KiB limit: errors %+v", lim.Errors)
	}
	if !strings.Contains(strings.Join(lim.Targets[0].Notes, "\n"), "--download-limit 8.0 KiB reached") {
		t.Errorf("no note of the limit: %q", lim.Targets[0].Notes)
	}
}
