//go:build cgo

package cuda_test

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cuda"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
	"github.com/mlwarden/mlwarden/scanners/vulns"
)

// TestNVMLHostVulns: host facts read through NVML (go-nvml's DGX H100
// mock: driver 550.54.15) and written as a host file are judged by the
// vulns check: the R550 driver misses the fixes of bulletin 5551 and
// later, and R550 is a branch the newer bulletins skip.
func TestNVMLHostVulns(t *testing.T) {
	h, err := cuda.HostFromNVML(dgxh100.New())
	if err != nil {
		t.Fatal(err)
	}
	h.ContainerToolkitVersion = "1.17.3" // as nvidia-ctk --version would add
	y, err := h.YAML()
	if err != nil {
		t.Fatal(err)
	}
	s, err := vulns.New()
	if err != nil {
		t.Fatal(err)
	}
	fs := scannertest.Scan(t, map[string][]byte{"dgx-h100.yaml": y}, s)
	want := map[string]bool{"affected by NVIDIA-5551": false, "affected by CVE-2025-23359": false, "branch R550": false}
	for _, f := range fs {
		for w := range want {
			if strings.Contains(f.Message, w) {
				want[w] = true
			}
		}
		if f.Check != scanners.CheckVulns || f.Path != "dgx-h100.yaml" {
			t.Errorf("finding %+v", f)
		}
	}
	for w, ok := range want {
		if !ok {
			t.Errorf("no finding %q in %d findings", w, len(fs))
		}
	}
	for _, f := range fs {
		if strings.Contains(f.Message, "affected by NVIDIA-5520") {
			t.Error("550.54.15 has bulletin 5520's fix (550.54.14)")
		}
	}
}
