//go:build cgo

package cuda

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// probeNVML reads host facts through NVML. libnvidia-ml is loaded with
// dlopen at Init; no NVML function is called unless Init succeeded, because
// calling one after a failed Init ends the process (unresolved symbol).
func probeNVML() (HostFacts, error) {
	return hostFromNVML(nvml.New())
}

// hostFromNVML reads host facts from an NVML interface (the real library or
// a mock).
func hostFromNVML(lib nvml.Interface) (HostFacts, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return HostFacts{}, fmt.Errorf("NVML: %s", ret.Error())
	}
	defer lib.Shutdown()
	h := HostFacts{OS: runtime.GOOS}
	if h.OS != "windows" {
		h.OS = "linux"
	}
	drv, ret := lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return HostFacts{}, fmt.Errorf("NVML driver version: %s", ret.Error())
	}
	h.DriverVersion = drv
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS && v > 0 {
		h.CUDADriverVersion = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return HostFacts{}, fmt.Errorf("NVML device count: %s", ret.Error())
	}
	for i := range n {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return HostFacts{}, fmt.Errorf("NVML device %d: %s", i, ret.Error())
		}
		var g GPU
		if name, ret := dev.GetName(); ret == nvml.SUCCESS {
			g.Name = name
		}
		g.Brand = "unknown"
		if b, ret := dev.GetBrand(); ret == nvml.SUCCESS {
			g.Brand = brandName(b)
		}
		maj, min, ret := dev.GetCudaComputeCapability()
		if ret != nvml.SUCCESS {
			return HostFacts{}, fmt.Errorf("NVML device %d compute capability: %s", i, ret.Error())
		}
		g.ComputeCapability = fmt.Sprintf("%d.%d", maj, min)
		if cur, _, ret := dev.GetMigMode(); ret == nvml.SUCCESS {
			g.MIG = cur == nvml.DEVICE_MIG_ENABLE
		}
		h.GPUs = append(h.GPUs, g)
	}
	if err := h.Normalize(); err != nil {
		return HostFacts{}, errors.Join(errors.New("NVML"), err)
	}
	return h, nil
}

// brandName spells an NVML brand as the container toolkit's requirement
// tokens do.
func brandName(b nvml.BrandType) string {
	switch b {
	case nvml.BRAND_QUADRO:
		return "quadro"
	case nvml.BRAND_TESLA:
		return "tesla"
	case nvml.BRAND_NVS:
		return "nvs"
	case nvml.BRAND_GRID:
		return "grid"
	case nvml.BRAND_GEFORCE:
		return "geforce"
	case nvml.BRAND_TITAN:
		return "titan"
	case nvml.BRAND_NVIDIA_VAPPS:
		return "vapps"
	case nvml.BRAND_NVIDIA_VPC:
		return "vpc"
	case nvml.BRAND_NVIDIA_VCS:
		return "vcs"
	case nvml.BRAND_NVIDIA_VWS:
		return "vws"
	case nvml.BRAND_NVIDIA_CLOUD_GAMING:
		return "cloudgaming"
	case nvml.BRAND_QUADRO_RTX:
		return "quadrortx"
	case nvml.BRAND_NVIDIA_RTX:
		return "nvidiartx"
	case nvml.BRAND_NVIDIA:
		return "nvidia"
	case nvml.BRAND_GEFORCE_RTX:
		return "geforcertx"
	case nvml.BRAND_TITAN_RTX:
		return "titanrtx"
	}
	return "unknown"
}
