//go:build !mlwarden_sbatch

package image

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
)

func imgWriteOCI(t testing.TB, img v1.Image, idx v1.ImageIndex) string {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if img != nil {
		err = p.AppendImage(img)
	} else {
		err = p.AppendIndex(idx)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func imgWriteArchive(t testing.TB, img v1.Image) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "image.tar")
	tag, err := name.NewTag("example.test/mlwarden/fixture:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		t.Fatal(err)
	}
	return file
}

// imgCheckFixture checks what every scheme must give for imgTestImage.
func imgCheckFixture(t *testing.T, f imgTestFixture, res *scanners.Result, rec *imgRecorder) {
	t.Helper()
	if len(res.Errors) > 0 {
		t.Fatalf("errors:\n%s", imgDump(res))
	}
	layers, err := f.img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	diff := func(i int) string {
		d, err := layers[i].DiffID()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}

	// The deleted secret file is scanned, with the note, layer and history.
	env := rec.byPath("/app/.env")
	if len(env) != 1 {
		t.Fatalf("/app/.env seen %d times; saw %v", len(env), rec.paths())
	}
	a := env[0].a
	if a.Layer != diff(0) || a.LayerIndex != 0 || a.CreatedBy != "COPY app /app" {
		t.Errorf("/app/.env origin = %s %d %q", a.Layer, a.LayerIndex, a.CreatedBy)
	}
	if a.Note != "deleted in layer 2 — still present in the image" {
		t.Errorf("/app/.env note = %q", a.Note)
	}
	if a.Mode.Perm() != 0o644 || a.Size != int64(len(env[0].body)) {
		t.Errorf("/app/.env mode %v size %d", a.Mode, a.Size)
	}
	fs := imgFindingsAt(res, "/app/.env")
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "deleted in layer 2 — still present in the image") || fs[0].Layer != diff(0) {
		t.Errorf("findings in /app/.env:\n%s", imgDump(res))
	}

	// A replaced file: both copies, the old one noted.
	for _, s := range rec.byPath("/app/model.pkl") {
		switch s.a.LayerIndex {
		case 0:
			if s.a.Note != "replaced in layer 3 — the old copy is still present in the image" || s.body != imgTestPickle() {
				t.Errorf("old model.pkl: note %q", s.a.Note)
			}
		case 2:
			if s.a.Note != "" {
				t.Errorf("new model.pkl: note %q", s.a.Note)
			}
		}
	}
	if n := len(rec.byPath("/app/model.pkl")); n != 2 {
		t.Errorf("model.pkl seen %d times", n)
	}
	// An opaque directory hides what was below it.
	if s := rec.byPath("/opt/old/notes.txt"); len(s) != 1 || s[0].a.Note != "deleted in layer 3 — still present in the image" {
		t.Errorf("/opt/old/notes.txt: %+v", s)
	}
	if s := rec.byPath("/opt/new.txt"); len(s) != 1 || s[0].a.Note != "" {
		t.Errorf("/opt/new.txt: %+v", s)
	}
	// Links are not artifacts; whiteouts are not files.
	for _, p := range []string{"/app/latest.pkl", "/app/hard", "/app/.wh..env", "/opt/.wh..wh..opq"} {
		if s := rec.byPath(p); len(s) != 0 {
			t.Errorf("%s handed over as an artifact", p)
		}
	}
	// The zstd layer, after an empty-layer history entry.
	if s := rec.byPath("/srv/run.sh"); len(s) != 1 || s[0].a.LayerIndex != 3 || s[0].a.CreatedBy != "COPY run.sh /srv/" {
		t.Errorf("/srv/run.sh: %+v", s)
	}

	// The config is an artifact with the raw JSON.
	cfg := rec.byPath(ConfigPath)
	if len(cfg) != 1 || cfg[0].a.Kind != scanners.ArtifactImageConfig {
		t.Fatalf("config artifact: %+v", cfg)
	}
	// It names the digest that was pulled, for checks that ask the registry.
	if d := res.Targets[0].Digest; d == "" || cfg[0].a.Digest != d {
		t.Errorf("config artifact digest %q, target digest %q", cfg[0].a.Digest, d)
	}
	var cf v1.ConfigFile
	if err := json.Unmarshal([]byte(cfg[0].body), &cf); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cf.Config.Env, "HF_TOKEN="+f.env) || cf.Config.Cmd[0] != "jupyter" || len(cf.History) != 5 {
		t.Errorf("config: %+v", cf.Config)
	}
	if fs := imgFindingsAt(res, ConfigPath); len(fs) == 0 {
		t.Errorf("no finding for the ENV token:\n%s", imgDump(res))
	}
	if tg := res.Targets[0]; tg.Kind != scanners.KindImage || !strings.HasPrefix(tg.Digest, "sha256:") {
		t.Errorf("target %+v", tg)
	}
	for _, f := range res.Findings {
		if strings.Contains(f.Message, f.Secret) && f.Secret != "" || strings.Contains(f.Evidence, "hf_") && len(f.Evidence) > 10 {
			t.Errorf("secret shown: %+v", f)
		}
	}
}

func TestImageOCI(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	dir := imgWriteOCI(t, f.img, nil)
	res, rec := imgScan(t, SchemeOCI, dir, Options{})
	imgCheckFixture(t, f, res, rec)
	want, _ := f.img.Digest()
	if res.Targets[0].Digest != want.String() || res.Targets[0].Name != "oci:"+dir {
		t.Errorf("target %+v, want digest %s", res.Targets[0], want)
	}
}

func TestImageDockerArchive(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	file := imgWriteArchive(t, f.img)
	res, rec := imgScan(t, SchemeDockerArchive, file, Options{})
	imgCheckFixture(t, f, res, rec)
	cfgName, _ := f.img.ConfigName()
	if res.Targets[0].Digest != cfgName.String() {
		t.Errorf("target %+v, want the image ID %s", res.Targets[0], cfgName)
	}
}

func TestImageRegistry(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	ref := registrytest.Repo(t, registrytest.Registry(t)) + ":single"
	registrytest.PushImage(t, f.img, ref)
	res, rec := imgScan(t, SchemeRegistry, ref, Options{})
	imgCheckFixture(t, f, res, rec)
	want, _ := f.img.Digest()
	if res.Targets[0].Digest != want.String() || res.Targets[0].Name != ref {
		t.Errorf("target %+v", res.Targets[0])
	}
}

func TestImagePlatforms(t *testing.T) {
	idx := imgTestIndex(t)
	dir := imgWriteOCI(t, nil, idx)
	// The registry subtest skips alone when there is no registry.
	targets := []struct {
		scheme string
		ref    func(t *testing.T) string
	}{
		{SchemeOCI, func(*testing.T) string { return dir }},
		{SchemeRegistry, func(t *testing.T) string {
			ref := registrytest.Repo(t, registrytest.Registry(t)) + ":multi"
			registrytest.PushIndex(t, idx, ref)
			return ref
		}},
	}
	for _, tg := range targets {
		t.Run(tg.scheme, func(t *testing.T) {
			ref := tg.ref(t)
			for _, tc := range []struct {
				platform string
				configs  []string
				err      string
			}{
				{"", []string{ConfigPath}, ""},
				{"linux/arm64", []string{ConfigPath}, ""},
				{"all", []string{ConfigPath + "@linux/amd64", ConfigPath + "@linux/arm64"}, ""},
				{"linux/s390x", nil, "no image for platform linux/s390x in the index (it has: linux/amd64, linux/arm64"},
			} {
				res, rec := imgScan(t, tg.scheme, ref, Options{Platform: tc.platform})
				if tc.err != "" {
					if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, tc.err) {
						t.Errorf("%s: errors %v", tc.platform, res.Errors)
					}
					continue
				}
				if len(res.Errors) > 0 {
					t.Fatalf("%s: %s", tc.platform, imgDump(res))
				}
				got := rec.configs()
				if !slices.Equal(got, tc.configs) {
					t.Errorf("%s: configs %v, want %v", tc.platform, got, tc.configs)
				}
				want, _ := idx.Digest()
				tgt := res.Targets[0]
				if tgt.Digest != want.String() || len(tgt.Notes) != len(tc.configs) || !strings.HasPrefix(tgt.Notes[0], "platform linux/") {
					t.Errorf("%s: target %+v", tc.platform, tgt)
				}
				if tc.platform == "linux/arm64" {
					cfg := rec.byPath(ConfigPath)
					if len(cfg) != 1 || !strings.Contains(cfg[0].body, `"architecture":"arm64"`) {
						t.Errorf("arm64: wrong image picked")
					}
				}
			}
		})
	}
}

// TestImageDockerArchiveSeveral scans every image of `docker save a b`, and
// names an untagged one it cannot select instead of passing it over.
func TestImageDockerArchiveSeveral(t *testing.T) {
	f := imgTestImage(t, runtime.GOARCH)
	other := imgTestSecret("hf_", 7)
	extra, err := mutate.AppendLayers(empty.Image, imgTestLayer(t, compression.GZip,
		imgTestEntry{name: "srv/.env", body: "HF_TOKEN=" + other + "\n"}))
	if err != nil {
		t.Fatal(err)
	}
	tagA, _ := name.NewTag("example.test/ml/train:1")
	tagB, _ := name.NewTag("example.test/ml/serve:2")
	file := filepath.Join(t.TempDir(), "two.tar")
	if err := tarball.MultiWriteToFile(file, map[name.Tag]v1.Image{tagA: f.img, tagB: extra}); err != nil {
		t.Fatal(err)
	}
	res, rec := imgScan(t, SchemeDockerArchive, file, Options{})
	if len(res.Errors) > 0 {
		t.Fatalf("errors:\n%s", imgDump(res))
	}
	if len(imgFindingsAt(res, "/srv/.env")) != 1 {
		t.Errorf("the second image's secret was not found:\n%s", imgDump(res))
	}
	for _, tag := range []string{tagA.String(), tagB.String()} {
		if _, ok := rec.seen[ConfigPath+"@"+tag+"@"]; !ok {
			t.Errorf("no config artifact for %s; seen %v", tag, slices.Collect(maps.Keys(rec.seen)))
		}
	}
	if n := res.Targets[0].Notes; len(n) == 0 || !strings.Contains(strings.Join(n, "\n"), "2 images") {
		t.Errorf("notes %q", n)
	}

	// An image saved by digest has no tag to select it by.
	d, _ := extra.Digest()
	byDigest, _ := name.NewDigest("example.test/ml/serve@" + d.String())
	file2 := filepath.Join(t.TempDir(), "mixed.tar")
	if err := tarball.MultiRefWriteToFile(file2, map[name.Reference]v1.Image{tagA: f.img, byDigest: extra}); err != nil {
		t.Fatal(err)
	}
	res, _ = imgScan(t, SchemeDockerArchive, file2, Options{})
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "untagged") {
		t.Errorf("errors %+v, want one naming the untagged image", res.Errors)
	}
	if len(imgFindingsAt(res, "/srv/.env")) != 0 || len(res.Findings) == 0 {
		t.Errorf("the tagged image should still be scanned:\n%s", imgDump(res))
	}
}
