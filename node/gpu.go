package node

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxGPUProcesses bounds what a --gpu-processes file or NVML gives.
const maxGPUProcesses = 65536

// ParseGPUProcesses reads what `nvidia-smi
// --query-compute-apps=pid,process_name,used_memory,gpu_uuid
// --format=csv,noheader` prints (a header line, as --format=csv prints it,
// is skipped). Lines it cannot read are an error naming the line.
func ParseGPUProcesses(b []byte) ([]GPUProcess, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	var out []GPUProcess
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("gpu processes: %w", err)
		}
		if len(rec) == 0 || len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if line == 1 && strings.EqualFold(strings.TrimSpace(rec[0]), "pid") {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(rec[0]))
		if err != nil || pid <= 0 {
			return out, fmt.Errorf("gpu processes: line %d: want a PID first", line)
		}
		if len(out) == maxGPUProcesses {
			return out, fmt.Errorf("gpu processes: more than %d", maxGPUProcesses)
		}
		p := GPUProcess{PID: pid}
		if len(rec) > 1 {
			p.Name = clip(strings.TrimSpace(rec[1]), 256)
		}
		if len(rec) > 2 {
			p.UsedMemory = clip(strings.TrimSpace(rec[2]), 32)
		}
		if len(rec) > 3 {
			p.GPU = clip(strings.TrimSpace(rec[3]), 96)
		}
		out = append(out, p)
	}
}

func (a *Audit) gpus(ctx context.Context, o Options, _ Limits) {
	switch {
	case o.GPUProcesses != nil:
		a.GPU.Source = o.GPUSource
		ps, err := ParseGPUProcesses(o.GPUProcesses)
		if err != nil {
			a.incomplete("%s: %v", o.GPUSource, err)
		}
		a.GPU.Processes = ps
	case o.NoNVML:
		a.GPU.Note = "GPU processes not read: give --gpu-processes (nvidia-smi --query-compute-apps CSV) to audit a tree under --root"
	default:
		g, err := probeNVML(ctx)
		if err != nil {
			a.GPU.Note = "no GPU processes read: " + err.Error()
			break
		}
		g.Source = "nvml"
		a.GPU = g
	}
	if a.GPU.Note != "" {
		a.Notes = append(a.Notes, a.GPU.Note)
	}
}
