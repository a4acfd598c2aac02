//go:build !mlwarden_sbatch

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

const cudaFixtures = "../../../fixtures/cuda"

// TestCUDACheckInventoryGolden checks a requirements file against every pool
// of an inventory; the JSON output is compared with a golden file
// (MLWARDEN_UPDATE_GOLDEN=1 rewrites it).
func TestCUDACheckInventoryGolden(t *testing.T) {
	code, out, errOut := run(t, "", "cuda", "check", filepath.Join(cudaFixtures, "requirements.txt"),
		"--inventory", filepath.Join(cudaFixtures, "inventory.yaml"), "--format", "json")
	if code != ExitFindings {
		t.Errorf("exit %d, want 1 (some pool incompatible); stderr: %s", code, errOut)
	}
	var rep struct {
		Results []struct {
			Target, Host, DeclaredCUDA, Verdict string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := map[string]string{"a100-r535": "compatible", "rtx5090": "incompatible", "v100-r470": "incompatible", "h100-r580": "compatible"}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(want))
	}
	for _, r := range rep.Results {
		if want[r.Host] != r.Verdict {
			t.Errorf("pool %s: %s, want %s", r.Host, r.Verdict, want[r.Host])
		}
	}
	golden := filepath.Join(cudaFixtures, "check-inventory.golden.json")
	out = strings.ReplaceAll(out, filepath.ToSlash(cudaFixtures), "FIXTURES")
	if os.Getenv("MLWARDEN_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != out {
		t.Errorf("output differs from %s (MLWARDEN_UPDATE_GOLDEN=1 to update):\n%s", golden, out)
	}
}

func TestCUDACheck(t *testing.T) {
	req := filepath.Join(cudaFixtures, "requirements.txt")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"driver and gpu flags", []string{req, "--driver", "550.54.15", "--gpu", "9.0:nvidia"}, ExitOK, "compatible"},
		{"old driver", []string{req, "--driver", "470.82.01", "--gpu", "8.0:tesla"}, ExitFindings, "incompatible"},
		{"host file", []string{req, "--host", filepath.Join(cudaFixtures, "pools", "a100-r535.yaml")}, ExitOK, "compatible"},
		{"env and require", []string{"--env", "CUDA_VERSION=13.0.2", "--require", "cuda>=13.0 brand=nvidia,driver>=535,driver<536", "--driver", "535.104.05", "--gpu", "9.0:nvidia"}, ExitOK, "compatible-via-forward-compat"},
		{"invalid requirement", []string{"--require", "cuda=>12", "--driver", "550.54.15"}, ExitFindings, "invalid expression"},
		{"dockerfile arch list", []string{filepath.Join(cudaFixtures, "Dockerfile"), "--driver", "580.65.06", "--gpu", "7.0:tesla"}, ExitFindings, "below compute capability 7.5"},
		{"sbatch module", []string{filepath.Join(cudaFixtures, "train.sbatch"), "--driver", "550.54.15"}, ExitOK, "12.4"},
		{"nothing declared", []string{filepath.Join(cudaFixtures, "pools"), "--driver", "550.54.15"}, ExitError, "unknown"},
		{"env without CUDA", []string{"--env", "FOO=bar", "--driver", "550.54.15"}, ExitError, "unknown"},
		{"compat lib path only", []string{"--env", "CUDA_VERSION=12.2.0", "--driver", "580.65.06", "--gpu", "8.9:geforce"}, ExitOK, "compatible"},
		{"missing target", []string{"no/such/file.txt", "--driver", "550.54.15"}, ExitError, "error:"},
		{"no args", []string{"--driver", "550.54.15"}, ExitError, ""},
		{"two host sources", []string{req, "--driver", "550.54.15", "--host", "x.yaml"}, ExitError, ""},
		{"gpu without driver", []string{req, "--gpu", "9.0"}, ExitError, ""},
		{"bad gpu", []string{req, "--driver", "550.54.15", "--gpu", "hopper"}, ExitError, ""},
		{"bad format", []string{req, "--driver", "550.54.15", "--format", "xml"}, ExitError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, "", append([]string{"cuda", "check"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", code, tt.code, tt.want, out, errOut)
			}
		})
	}
}

func TestCUDAHostNoDriver(t *testing.T) {
	if _, err := os.Stat("/proc/driver/nvidia/version"); err == nil {
		t.Skip("an NVIDIA driver is present")
	}
	code, _, errOut := run(t, "", "cuda", "host")
	if code != ExitError || !strings.Contains(errOut, "NVIDIA") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if code, _, _ := run(t, "", "cuda", "host", "--format", "xml"); code != ExitError {
		t.Errorf("bad format: exit %d", code)
	}
}

// TestCUDACheckPipeline: `cuda check` runs through the scan pipeline, so the
// settings, skips, limits and suppressions of every other front end apply to
// it: a skipped file is not read, an ignore entry, the target directory's
// .mlwarden.yaml or an inline comment suppresses a verdict's problems (the
// verdict no longer fails the run and says why), and the limits end the run
// with exit 2.
func TestCUDACheckPipeline(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// On R550 (CUDA 12.4), the cu124 pin runs and the legacy cu130 one does not.
	proj := filepath.Dir(write("proj/requirements.txt", "torch==2.4.0+cu124\n"))
	write("proj/legacy/requirements.txt", "torch==2.9.0+cu130\n")
	ignore := write("ignore.yaml", "ignore:\n  - rule: cuda/incompatible\n    path: legacy/requirements.txt\n    reason: only for the R580 pool\n")
	skip := write("skip.yaml", "skip-dirs: [legacy]\n")
	inline := filepath.Dir(write("inline/requirements.txt", "torch==2.9.0+cu130  # mlwarden:ignore cuda/incompatible\n"))
	own := filepath.Dir(write("own/requirements.txt", "torch==2.9.0+cu130\n"))
	write("own/.mlwarden.yaml", "ignore:\n  - rule: cuda/incompatible\n    reason: the project's own ignore entry\n")
	host := []string{"--driver", "550.54.15", "--gpu", "9.0:nvidia"}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"a directory: every file counts", []string{proj}, ExitFindings, []string{"incompatible", "CUDA 13.0"}},
		{"--skip-dirs", []string{proj, "--skip-dirs", "legacy"}, ExitOK, []string{"compatible", "12.4"}},
		{"--skip-files", []string{proj, "--skip-files", "legacy/requirements.txt"}, ExitOK, []string{"compatible", "12.4"}},
		{"skip-dirs from --config", []string{proj, "--config", skip}, ExitOK, []string{"compatible"}},
		{"an ignore entry of --config", []string{proj, "--config", ignore}, ExitOK, []string{"incompatible (suppressed)", "[suppressed: ignored: only for the R580 pool]"}},
		{"an ignore entry, JSON", []string{proj, "--config", ignore, "--format", "json"}, ExitOK, []string{`"why": "ignored: only for the R580 pool"`, `"rule": "cuda/incompatible"`}},
		{"an inline comment", []string{inline}, ExitOK, []string{"incompatible (suppressed)", "[suppressed: inline mlwarden:ignore comment]"}},
		{"the target directory's .mlwarden.yaml", []string{own}, ExitOK, []string{"incompatible (suppressed)", "the project's own ignore entry"}},
		{"--no-target-config", []string{own, "--no-target-config"}, ExitFindings, []string{"incompatible"}},
		{"--max-file-size", []string{proj, "--max-file-size", "4B"}, ExitError, []string{"error:"}},
		{"--timeout", []string{proj, "--timeout", "1ns"}, ExitError, []string{"--timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, "", append(append([]string{"cuda", "check"}, tt.args...), host...)...)
			for _, w := range tt.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			if code != tt.code || t.Failed() {
				t.Errorf("exit %d (want %d):\n%s%s", code, tt.code, out, errOut)
			}
		})
	}
}

// TestCUDACheckImageWarmCache: an image whose config and files are judged
// together (CUDA 13.0 through the compat library it ships, on an R535
// data-center pool) gets the same verdict when its layer comes from the
// result cache: the declarations are kept with the cached layer, apart from
// what `scan` caches for the same layer.
func TestCUDACheckImageWarmCache(t *testing.T) {
	img := imageWith(t, map[string]string{"usr/local/cuda-13.0/compat/libcuda.so.580.65.06": "\x7fELF not really"})
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Env = []string{"CUDA_VERSION=13.0.2", "NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=unknown,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	hostFile := filepath.Join(dir, "pool.yaml")
	os.WriteFile(hostFile, []byte("driver_version: 535.104.05\ngpus: [{compute_capability: \"9.0\", brand: nvidia}, {name: NVIDIA GH200 480GB, compute_capability: \"9.0\", brand: unknown}]\n"), 0o644)
	args := []string{"cuda", "check", "oci:" + filepath.Join(dir, "oci"), "--platform", "linux/amd64", "--cache-dir", filepath.Join(dir, "cache"),
		"--host", hostFile, "--format", "json"}
	// scan's cached layers hold its findings, not these declarations: a
	// scan of the image with the same settings first must not feed the
	// check.
	if code, res := scanJSON(t, "--checks", "cuda", "--host", hostFile, "--platform", "linux/amd64", "--cache-dir", filepath.Join(dir, "cache"), args[2]); code == ExitError {
		t.Fatalf("scan: exit %d: %v", code, res.Errors)
	}
	var outs []string
	for _, pass := range []string{"after scan", "warm"} {
		code, out, errOut := run(t, "", args...)
		if code != ExitOK || !strings.Contains(out, `"compatible-via-forward-compat"`) || !strings.Contains(out, "libcuda.so.580.65.06") {
			t.Fatalf("%s: exit %d:\n%s%s", pass, code, out, errOut)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Errorf("warm run differs:\n%s\ncold:\n%s", outs[1], outs[0])
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "cache")); len(entries) == 0 {
		t.Error("nothing was cached")
	}
}

// TestCUDACheckBaseline: a previous scan report given as --baseline
// suppresses the problems it holds, as it does for scan.
func TestCUDACheckBaseline(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "requirements.txt"), []byte("torch==2.9.0+cu130\n"), 0o644)
	hostFile := filepath.Join(dir, "pool.yaml")
	os.WriteFile(hostFile, []byte("driver_version: 550.54.15\ngpus: [{compute_capability: \"9.0\", brand: nvidia}]\n"), 0o644)
	base := filepath.Join(dir, "baseline.json")
	if code, _, errOut := run(t, "", "scan", "--checks", "cuda", "--host", hostFile, "--format", "json", "-o", base, proj); code != ExitFindings {
		t.Fatalf("scan: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, ExitFindings, "incompatible"},
		{[]string{"--baseline", base}, ExitOK, "[suppressed: in baseline]"},
	} {
		code, out, errOut := run(t, "", append([]string{"cuda", "check", proj, "--host", hostFile}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d (want %d), output lacks %q:\n%s%s", tc.args, code, tc.code, tc.want, out, errOut)
		}
	}
}
