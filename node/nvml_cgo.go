//go:build cgo

package node

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// probeNVML reads the driver, the GPUs and their compute processes through
// NVML. libnvidia-ml is loaded with dlopen at Init; no NVML function is
// called unless Init succeeded (a call after a failed Init ends the
// process: scanners/cuda does the same).
func probeNVML(_ context.Context) (GPUFacts, error) { return gpuFromNVML(nvml.New()) }

func gpuFromNVML(lib nvml.Interface) (GPUFacts, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return GPUFacts{}, fmt.Errorf("NVML: %s", ret.Error())
	}
	defer lib.Shutdown()
	var g GPUFacts
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		g.Driver = v
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return GPUFacts{}, fmt.Errorf("NVML device count: %s", ret.Error())
	}
	for i := range n {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return g, fmt.Errorf("NVML device %d: %s", i, ret.Error())
		}
		d := GPU{Index: i}
		if s, ret := dev.GetUUID(); ret == nvml.SUCCESS {
			d.UUID = s
		}
		if s, ret := dev.GetName(); ret == nvml.SUCCESS {
			d.Name = s
		}
		if cur, _, ret := dev.GetMigMode(); ret == nvml.SUCCESS {
			d.MIG = cur == nvml.DEVICE_MIG_ENABLE
		}
		g.GPUs = append(g.GPUs, d)
		ps, ret := dev.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS {
			return g, fmt.Errorf("NVML device %d compute processes: %s", i, ret.Error())
		}
		for _, p := range ps {
			if len(g.Processes) == maxGPUProcesses {
				return g, fmt.Errorf("NVML: more than %d compute processes", maxGPUProcesses)
			}
			g.Processes = append(g.Processes, GPUProcess{PID: int(p.Pid), UsedMemory: fmt.Sprintf("%d MiB", p.UsedGpuMemory>>20), GPU: d.UUID})
		}
	}
	return g, nil
}
