package misconfig

import (
	"bytes"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

// maxYAMLDocs bounds the documents read from one YAML stream.
const maxYAMLDocs = 1000

// yaml reads Kubernetes manifests (any kind whose pod spec has containers,
// so Kubeflow and Ray resources are covered too) and compose-style files.
// Aliases are resolved by the YAML library.
func (r *run) yaml(data []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for range maxYAMLDocs {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			// io.EOF ends the stream; anything else is YAML we cannot read,
			// and the line-by-line checks still ran on it.
			return
		}
		r.walkYAML(&doc, 0)
	}
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// get returns the value node of key in a mapping node.
func get(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

func isTrue(n *yaml.Node) bool {
	n = resolve(n)
	return n != nil && n.Kind == yaml.ScalarNode && (n.Value == "true" || n.Value == "True" || n.Value == "yes")
}

const maxYAMLDepth = 64

func (r *run) walkYAML(n *yaml.Node, depth int) {
	n = resolve(n)
	if n == nil || depth > maxYAMLDepth {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			r.walkYAML(c, depth+1)
		}
	case yaml.MappingNode:
		if cs := get(n, "containers"); cs != nil && cs.Kind == yaml.SequenceNode {
			r.podSpec(n)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolve(n.Content[i+1])
			switch k.Value {
			case "privileged":
				if isTrue(v) {
					r.add(RulePrivileged, scanners.SeverityHigh, k.Line, "privileged: true", "privileged: true gives the container every device and capability of the host: it can take over the node and every GPU job on it. Remove it; add only the capabilities the workload needs")
				}
			case "securityContext":
				r.securityContext(v)
			case "hostPath":
				if p := get(v, "path"); p != nil && strings.HasPrefix(p.Value, "/dev/nvidia") {
					r.add(RuleGPUIsolation, scanners.SeverityHigh, p.Line, "hostPath: "+p.Value, "hostPath mount of "+p.Value+" hands the pod GPU devices outside the device plugin's allocation. Request GPUs with resources.limits nvidia.com/gpu instead")
				}
			case "command":
				if v.Kind == yaml.ScalarNode && v.Value != "" {
					// compose-style command string
					for _, cl := range shellCommands([]byte(v.Value), 1) {
						cl.line = v.Line
						r.command(cl)
					}
				}
			}
			r.walkYAML(v, depth+1)
		}
	}
}

func (r *run) securityContext(sc *yaml.Node) {
	if sc == nil || sc.Kind != yaml.MappingNode {
		return
	}
	var adds []*yaml.Node
	if caps := get(sc, "capabilities"); caps != nil {
		if add := get(caps, "add"); add != nil && add.Kind == yaml.SequenceNode {
			adds = add.Content
		}
	}
	esc := get(sc, "allowPrivilegeEscalation")
	for _, a := range adds {
		a = resolve(a)
		c := strings.TrimPrefix(strings.ToUpper(a.Value), "CAP_")
		switch {
		case c == "ALL":
			r.add(RulePrivileged, scanners.SeverityHigh, a.Line, "capabilities.add: "+a.Value, "capabilities.add ALL gives the container every Linux capability, which is as good as privileged. Add only the capabilities the workload needs")
		case c == "SYS_ADMIN" && isTrue(esc):
			r.add(RulePrivileged, scanners.SeverityHigh, a.Line, "allowPrivilegeEscalation: true, capabilities.add: "+a.Value, "allowPrivilegeEscalation: true with CAP_SYS_ADMIN lets the container escape to the node. Set allowPrivilegeEscalation: false and drop SYS_ADMIN")
		}
	}
}

// gpuResource reports whether a resources block requests a GPU: a device
// plugin resource, or DRA claims (resources.claims), which the NVIDIA DRA
// driver answers with the devices it allocated. A claim of another kind of
// device is not told apart here (the claim may be in another file): the
// cluster judgement decides whether the pod is a GPU pod.
func gpuResource(res *yaml.Node) bool {
	if cl := get(res, "claims"); cl != nil && cl.Kind == yaml.SequenceNode && len(cl.Content) > 0 {
		return true
	}
	for _, k := range []string{"limits", "requests"} {
		m := get(res, k)
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if strings.HasSuffix(m.Content[i].Value, "/gpu") || strings.Contains(m.Content[i].Value, "nvidia.com/") {
				return true
			}
		}
	}
	return false
}

func (r *run) podSpec(spec *yaml.Node) {
	for _, key := range []string{"containers", "initContainers", "ephemeralContainers"} {
		cs := get(spec, key)
		if cs == nil || cs.Kind != yaml.SequenceNode {
			continue
		}
		for _, c := range cs.Content {
			r.container8s(resolve(c))
		}
	}
}

func (r *run) container8s(c *yaml.Node) {
	if c == nil || c.Kind != yaml.MappingNode {
		return
	}
	cl := cmdLine{line: c.Line}
	if e := get(c, "env"); e != nil && e.Kind == yaml.SequenceNode {
		for _, item := range e.Content {
			name, val := get(item, "name"), get(item, "value")
			if name == nil {
				continue
			}
			v := ""
			if val != nil {
				v = val.Value
			}
			cl.words = append(cl.words, name.Value+"="+v)
			cl.wlines = append(cl.wlines, name.Line)
			if name.Value == "NVIDIA_VISIBLE_DEVICES" && v != "" && v != "void" && v != "none" && !gpuResource(get(c, "resources")) {
				r.add(RuleGPUIsolation, scanners.SeverityHigh, name.Line, "NVIDIA_VISIBLE_DEVICES="+v,
					"NVIDIA_VISIBLE_DEVICES="+v+" in a container that requests no nvidia.com/gpu: the NVIDIA runtime exposes those GPUs anyway, bypassing the scheduler and other tenants' allocations. Request GPUs with resources.limits nvidia.com/gpu and drop the variable")
			}
		}
	}
	for _, k := range []string{"command", "args"} {
		v := get(c, k)
		if v == nil || v.Kind != yaml.SequenceNode {
			continue
		}
		if cl.line == c.Line {
			cl.line = v.Line
		}
		for _, w := range v.Content {
			cl.words = append(cl.words, resolve(w).Value)
			wl := w.Line
			if wl < c.Line {
				wl = 0 // from an anchor elsewhere: at the container's line
			}
			cl.wlines = append(cl.wlines, wl)
		}
	}
	r.command(cl)
	for _, w := range nested(cl, 0, map[string]string{}) {
		r.command(w)
	}
}
