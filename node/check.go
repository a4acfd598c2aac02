package node

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Check is the node check: it wants no artifact and judges an audit when
// its target (the node) is finished. Built without an audit (the catalog's
// row) it only describes its rules, so that `mlwarden rules`, SARIF rule
// descriptions, ignore entries and --fail-on know them.
type Check struct {
	audit    *Audit
	findings []scanners.Finding
}

// NewCheck returns the node check judging a (nil: none).
func NewCheck(a *Audit) *Check {
	c := &Check{audit: a}
	if a != nil {
		c.findings, _ = Judge(a)
	}
	return c
}

// Check implements scanners.Scanner.
func (c *Check) Check() string { return scanners.CheckNode }

// Rules implements scanners.Scanner.
func (c *Check) Rules() []scanners.Rule { return Rules() }

// Wants implements scanners.Scanner: the node check reads no file.
func (c *Check) Wants(*scanners.Artifact, []byte) bool { return false }

// Scan implements scanners.Scanner; it is never called.
func (c *Check) Scan(context.Context, *scanners.Artifact, scanners.Content) ([]scanners.Finding, error) {
	return nil, nil
}

// FinishTarget implements scanners.TargetFinisher: the audit's findings,
// on its own target only.
func (c *Check) FinishTarget(_ context.Context, t scanners.Target) ([]scanners.Finding, error) {
	if c.audit == nil || t.Name != c.audit.Name {
		return nil, nil
	}
	return slices.Clone(c.findings), nil
}

// Findings are the audit's findings before suppression.
func (c *Check) Findings() []scanners.Finding { return slices.Clone(c.findings) }

// Source is the node as a scan target: its configuration files (Slurm,
// PAM, NVIDIA module parameters, the container toolkit's config, CDI
// specs) as artifacts for the other checks, read through the root, and its
// inventory as components.
type Source struct {
	audit *Audit
	root  string
}

// NewSource returns the node target of an audit of root.
func NewSource(a *Audit) *Source { return &Source{audit: a, root: a.Root} }

// Target implements scanners.Source.
func (s *Source) Target() scanners.Target {
	return scanners.Target{Name: s.audit.Name, Kind: scanners.KindNode, Notes: slices.Clone(s.audit.Notes)}
}

// maxErrors bounds the errors one audit reports, one per limit reached.
const maxErrors = 100

// Walk implements scanners.Source.
func (s *Source) Walk(ctx context.Context, sink scanners.Sink) error {
	a := s.audit
	for i, msg := range a.Incomplete {
		if i == maxErrors {
			sink.Error(scanners.Error{Target: a.Name, Message: fmt.Sprintf("%d more places not read in full", len(a.Incomplete)-i)})
			break
		}
		sink.Error(scanners.Error{Target: a.Name, Message: fmt.Errorf("%s: %w", msg, scanners.ErrIncomplete).Error()})
	}
	scanners.AddComponent(ctx, a.Inventory()...)
	rt, err := openRoot(s.root)
	if err != nil {
		return err
	}
	defer rt.Close()
	fsys := rt.FS()
	for _, name := range a.configFiles {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := rt.Open(name)
		if err != nil {
			sink.Error(scanners.Error{Target: a.Name, Path: name, Message: err.Error()})
			continue
		}
		// /proc files say size 0: read them whole (bounded) first.
		b, rerr := io.ReadAll(io.LimitReader(f, 4<<20))
		f.Close()
		if rerr != nil {
			sink.Error(scanners.Error{Target: a.Name, Path: name, Message: rerr.Error()})
			continue
		}
		art := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: a.Name, TargetKind: scanners.KindNode,
			Path: name, Size: int64(len(b)), FS: fsys}
		if err := sink.Artifact(art, strings.NewReader(string(b))); err != nil {
			return err
		}
	}
	return nil
}

// Component kinds of a node's inventory.
const (
	ComponentDriver     scanners.ComponentKind = "nvidia-driver"
	ComponentGPU        scanners.ComponentKind = "gpu"
	ComponentGPUProcess scanners.ComponentKind = "gpu-process"
)

// Inventory is the node's GPU inventory as report components: the driver,
// each GPU with its MIG mode, and each process on a GPU with its job or pod.
func (a *Audit) Inventory() []scanners.Component {
	var out []scanners.Component
	if a.GPU.Driver != "" {
		out = append(out, scanners.Component{Kind: ComponentDriver, Target: a.Name, Name: "NVIDIA driver", Version: a.GPU.Driver})
	}
	for _, g := range a.GPU.GPUs {
		out = append(out, scanners.Component{Kind: ComponentGPU, Target: a.Name, Name: g.Name,
			Properties: map[string]string{"index": strconv.Itoa(g.Index), "uuid": g.UUID, "mig": strconv.FormatBool(g.MIG)}})
	}
	for _, gp := range a.GPU.Processes {
		props := map[string]string{"pid": strconv.Itoa(gp.PID), "gpu": gp.GPU, "used_memory": gp.UsedMemory, "source": a.GPU.Source}
		name := gp.Name
		if p := a.Process(gp.PID); p != nil {
			if name == "" {
				name = p.Comm
			}
			props["uid"] = strconv.Itoa(p.UID)
			switch p.Allocation.Kind {
			case "slurm":
				props["slurm_job"] = p.Allocation.Job
				if p.Allocation.Step != "" {
					props["slurm_step"] = p.Allocation.Step
				}
			case "k8s":
				props["pod_uid"] = p.Allocation.Pod
				if p.Allocation.Container != "" {
					props["container"] = p.Allocation.Container
				}
			default:
				props["allocation"] = "none"
			}
		}
		for k, v := range props {
			if v == "" {
				delete(props, k)
			}
		}
		out = append(out, scanners.Component{Kind: ComponentGPUProcess, Target: a.Name, Path: "proc/" + strconv.Itoa(gp.PID), Name: name, Properties: props})
	}
	return out
}
