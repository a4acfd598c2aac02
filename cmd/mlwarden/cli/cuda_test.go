package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
