//go:build cgo

package cuda

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
)

func TestHostFromNVMLMocks(t *testing.T) {
	tests := []struct {
		name string
		lib  nvml.Interface
		cc   string
	}{
		{"dgxa100", dgxa100.New(), "8.0"},
		{"dgxh100", dgxh100.New(), "9.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := hostFromNVML(tt.lib)
			if err != nil {
				t.Fatal(err)
			}
			if h.DriverVersion != "550.54.15" || h.CUDADriverVersion != "12.4" || len(h.GPUs) != 8 {
				t.Fatalf("host %+v", h)
			}
			for _, g := range h.GPUs {
				if g.ComputeCapability != tt.cc || g.Brand != "nvidia" || g.Name == "" || g.MIG {
					t.Errorf("gpu %+v", g)
				}
			}
			// The host file round-trips.
			y, err := h.YAML()
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseHost(y)
			if err != nil {
				t.Fatalf("parse own YAML: %v\n%s", err, y)
			}
			if back.DriverVersion != h.DriverVersion || len(back.GPUs) != 8 || back.GPUs[0] != h.GPUs[0] {
				t.Errorf("round trip: %+v", back)
			}
		})
	}
}

func TestHostFromNVMLMIG(t *testing.T) {
	srv := dgxa100.New()
	dev, _ := srv.DeviceGetHandleByIndex(3)
	dev.SetMigMode(nvml.DEVICE_MIG_ENABLE)
	h, err := hostFromNVML(srv)
	if err != nil {
		t.Fatal(err)
	}
	if !h.GPUs[3].MIG || h.GPUs[0].MIG {
		t.Errorf("MIG modes: %+v", h.GPUs)
	}
}

// TestNVMLInitFailure checks that nothing is called after a failed Init: the
// mock panics on any function it was not given.
func TestNVMLInitFailure(t *testing.T) {
	lib := &mock.Interface{
		InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND },
	}
	if _, err := hostFromNVML(lib); err == nil {
		t.Fatal("no error")
	}
	if n := len(lib.InitCalls()); n != 1 {
		t.Errorf("Init called %d times", n)
	}
}

// TestProbeWithoutDriver runs the real library loader on a machine without
// a driver: Init fails and no other symbol is touched (the process would die).
func TestProbeWithoutDriver(t *testing.T) {
	if _, err := probeNVML(); err == nil {
		t.Skip("an NVIDIA driver is present")
	}
}

func TestBrandNames(t *testing.T) {
	for b, want := range map[nvml.BrandType]string{
		nvml.BRAND_TESLA: "tesla", nvml.BRAND_GEFORCE_RTX: "geforcertx", nvml.BRAND_NVIDIA_CLOUD_GAMING: "cloudgaming",
		nvml.BRAND_NVIDIA: "nvidia", nvml.BRAND_UNKNOWN: "unknown", nvml.BRAND_NVIDIA_NPU: "unknown",
	} {
		if got := brandName(b); got != want {
			t.Errorf("brandName(%d) = %q, want %q", b, got, want)
		}
	}
}
