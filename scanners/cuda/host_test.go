package cuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hostYAML = `os: linux                      # or windows
driver_version: 550.54.15
cuda_driver_version: "12.4"    # optional
gpus:
  - {name: NVIDIA H100 80GB HBM3, brand: nvidia, compute_capability: "9.0", mig: false}
forward_compat:
  cuda: "13.0"
  supported_branches: [535, 550, 570]
container_toolkit_mode: legacy
`

func TestParseHost(t *testing.T) {
	h, err := ParseHost([]byte(hostYAML))
	if err != nil {
		t.Fatal(err)
	}
	if h.DriverVersion != "550.54.15" || h.CUDADriverVersion != "12.4" || len(h.GPUs) != 1 || h.GPUs[0].ComputeCapability != "9.0" ||
		h.ForwardCompat == nil || len(h.ForwardCompat.SupportedBranches) != 3 || h.ContainerToolkitMode != ModeLegacy {
		t.Fatalf("%+v", h)
	}
	// JSON is read too, and unquoted numbers keep their spelling.
	h2, err := ParseHost([]byte(`{"driver_version": "535.104.05", "gpus": [{"compute_capability": 8.0, "brand": "Tesla"}]}`))
	if err != nil || h2.GPUs[0].ComputeCapability != "8.0" || h2.GPUs[0].Brand != "tesla" || h2.OS != "linux" {
		t.Fatalf("json: %+v %v", h2, err)
	}
	y, _ := h.YAML()
	if !strings.Contains(string(y), "- {name: NVIDIA H100 80GB HBM3, brand: nvidia, compute_capability: \"9.0\", mig: false}") {
		t.Errorf("YAML output:\n%s", y)
	}
	for _, bad := range []string{
		"gpus: []\n",                                  // no driver
		"driver_version: abc\n",                       // not a version
		"driver_version: 550.1\nos: macos\n",          // os
		"driver_version: 550.1\nunknown_key: 1\n",     // typo
		"driver_version: 550.1\ngpus: [{brand: x}]\n", // no compute capability
		"driver_version: 550.1\ncontainer_toolkit_mode: csv\n",
		"driver_version: 550.1\nforward_compat: {supported_branches: [535]}\n",
	} {
		if _, err := ParseHost([]byte(bad)); err == nil {
			t.Errorf("ParseHost(%q): no error", bad)
		}
	}
}

func TestLoadInventory(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pools", "h100.yaml"), []byte(hostYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	inv := `pools:
  - {name: h100, host_file: pools/h100.yaml}
  - name: a100-r535
    host: {driver_version: 535.104.05, gpus: [{compute_capability: "8.0", brand: nvidia}]}
`
	p := filepath.Join(dir, "inv.yaml")
	if err := os.WriteFile(p, []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	pools, err := LoadInventory(p)
	if err != nil || len(pools) != 2 || pools[0].Name != "h100" || pools[1].Host.DriverVersion != "535.104.05" {
		t.Fatalf("%+v %v", pools, err)
	}
	s, err := New(WithInventory(p))
	if err != nil || len(s.Pools()) != 2 {
		t.Fatalf("New: %v", err)
	}
	evs := s.EvaluateAll(declared("12.4"))
	if evs[0].Verdict != Compatible || evs[1].Verdict != Compatible || evs[1].Host != "a100-r535" {
		t.Errorf("%+v", evs)
	}
	for _, bad := range []string{"pools: []\n", "pools: [{name: a}]\n", "pools: [{host_file: x}]\n",
		"pools: [{name: a, host: {driver_version: 1}}, {name: a, host: {driver_version: 1}}]\n",
		"pools: [{name: a, host_file: missing.yaml}]\n"} {
		if _, err := parseInventory([]byte(bad), dir); err == nil {
			t.Errorf("parseInventory(%q): no error", bad)
		}
	}
}

func TestParseProcAndSMI(t *testing.T) {
	for text, want := range map[string]string{
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  Thu Apr  3 01:14:19 UTC 2025\nGCC version:  gcc version 11.4.0\n":        "535.216.03",
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.195.03  Release Build  (dvs-builder@U22)  Sat Sep 20 00:47:16 UTC 2025": "570.195.03",
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.142  Tue":                                                                        "580.142",
	} {
		if got, err := ParseProcVersion(text); err != nil || got != want {
			t.Errorf("ParseProcVersion = %q %v, want %q", got, err, want)
		}
	}
	if _, err := ParseProcVersion("garbage"); err == nil {
		t.Error("garbage: no error")
	}
	drv, gpus, err := ParseSMIQuery([]byte("570.153.02, 12.0, NVIDIA GeForce RTX 5090, [N/A]\n570.153.02, 9.0, NVIDIA H100 80GB HBM3, Enabled\n"))
	if err != nil || drv != "570.153.02" || len(gpus) != 2 || gpus[0].Brand != "geforcertx" || gpus[1].Brand != "nvidia" || !gpus[1].MIG || gpus[0].ComputeCapability != "12.0" {
		t.Errorf("smi: %q %+v %v", drv, gpus, err)
	}
	if got := ParseSMIBanner([]byte("| NVIDIA-SMI 535.161.07   Driver Version: 535.161.07   CUDA Version: 12.2     |")); got != "12.2" {
		t.Errorf("banner = %q", got)
	}
}

func TestToolkitModeCDI(t *testing.T) {
	for cfg, want := range map[string]bool{
		"[nvidia-container-runtime]\nmode = \"cdi\"\n":    true,
		"[nvidia-container-runtime]\nmode = \"auto\"\n":   false,
		"[nvidia-container-runtime]\nmode = \"legacy\"\n": false,
		"garbage [": false,
		"":          false,
	} {
		if got := ToolkitModeCDI([]byte(cfg)); got != want {
			t.Errorf("ToolkitModeCDI(%q) = %v", cfg, got)
		}
	}
}
