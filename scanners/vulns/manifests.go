package vulns

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cuda"
)

// Bounds on one YAML stream.
const (
	maxDocs  = 1000
	maxDepth = 64
	maxNodes = 1 << 20
)

// components maps the last element of an NVIDIA image repository (and the
// image: key of the GPU Operator's values) to the advisory table's package.
var components = map[string]string{
	"container-toolkit": rules.PkgContainerToolkit,
	"gpu-operator":      rules.PkgGPUOperator,
	"k8s-device-plugin": rules.PkgDevicePlugin,
	"k8s-mig-manager":   rules.PkgMIGManager,
	"driver":            rules.PkgDriver,
}

// charts maps Helm chart names to packages.
var charts = map[string]string{
	"gpu-operator":         rules.PkgGPUOperator,
	"nvidia-device-plugin": rules.PkgDevicePlugin,
}

// manifests reads a YAML (or JSON) stream: host files and inventories,
// Helm charts' Chart.yaml, and anything that names an NVIDIA component's
// image or version (values files, rendered manifests, the ClusterPolicy).
func manifests(a *scanners.Artifact, data []byte) []Package {
	lower := bytes.ToLower(data)
	if !bytes.Contains(lower, []byte("nvidia")) && !bytes.Contains(lower, []byte("driver_version")) &&
		!bytes.Contains(lower, []byte("gpu-operator")) && !bytes.Contains(lower, []byte("pools")) {
		return nil // nearly every YAML file: nothing to read
	}
	w := &walker{a: a, chart: scanners.Base(a.Path) == "chart.yaml"}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; i < maxDocs; i++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if err != io.EOF && i == 0 {
				return nil // not YAML we can read
			}
			break
		}
		if i == 0 && len(doc.Content) == 1 {
			if w.hostFile(doc.Content[0]) || w.inventory(doc.Content[0]) {
				continue
			}
			if w.chart {
				w.chartFile(doc.Content[0])
			}
		}
		w.walk(&doc, 0)
	}
	return w.out
}

type walker struct {
	a     *scanners.Artifact
	chart bool
	nodes int
	out   []Package
	seen  map[string]bool
}

func (w *walker) add(p Package) {
	k := p.Name + "\x00" + p.Version + "\x00" + strconv.Itoa(p.Line)
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if w.seen[k] {
		return
	}
	w.seen[k] = true
	w.out = append(w.out, p)
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxDepth; i++ {
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

func scalar(n *yaml.Node) string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return strings.TrimSpace(n.Value)
}

func (w *walker) walk(n *yaml.Node, depth int) {
	n = resolve(n)
	if n == nil || depth > maxDepth || w.nodes > maxNodes {
		return
	}
	w.nodes++
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			w.walk(c, depth+1)
		}
	case yaml.ScalarNode:
		if p, ok := imageRef(n.Value); ok {
			p.Line = n.Line
			w.add(p)
		}
	case yaml.MappingNode:
		w.valuesBlock(n)
		for i := 1; i < len(n.Content); i += 2 {
			w.walk(n.Content[i], depth+1)
		}
	}
}

// valuesBlock reads the GPU Operator's values and ClusterPolicy style
// ({repository: nvcr.io/nvidia/k8s, image: container-toolkit, version:
// v1.17.3-ubuntu20.04}) and the device plugin chart's ({repository:
// nvcr.io/nvidia/k8s-device-plugin, tag: v0.17.0}).
func (w *walker) valuesBlock(n *yaml.Node) {
	repo := scalar(get(n, "repository"))
	if repo != "" && !strings.Contains(strings.ToLower(repo), "nvidia") {
		return
	}
	img, verNode := scalar(get(n, "image")), get(n, "version")
	if pkg, ok := components[img]; ok && verNode != nil {
		if p, ok := tagVersion(pkg, scalar(verNode)); ok {
			p.Line, p.From = verNode.Line, "values "+path.Join(repo, img)+" version "+scalar(verNode)
			w.add(p)
		}
		return
	}
	if tagNode := get(n, "tag"); repo != "" && tagNode != nil {
		if pkg, ok := components[path.Base(repo)]; ok {
			if p, ok := tagVersion(pkg, scalar(tagNode)); ok {
				p.Line, p.From = tagNode.Line, "values "+repo+" tag "+scalar(tagNode)
				w.add(p)
			}
		}
	}
}

// imageRef reads an NVIDIA component's version from an image reference
// such as nvcr.io/nvidia/k8s/container-toolkit:v1.17.3-ubuntu20.04.
func imageRef(s string) (Package, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 512 || !strings.Contains(s, "nvidia") || strings.ContainsAny(s, " \t\n") {
		return Package{}, false
	}
	ref, _, _ := strings.Cut(s, "@") // a digest alone says no version
	slash := strings.LastIndexByte(ref, '/')
	colon := strings.LastIndexByte(ref, ':')
	if colon < slash || colon < 0 {
		return Package{}, false
	}
	repo, tag := ref[:colon], ref[colon+1:]
	if !strings.Contains(strings.ToLower(repo), "nvidia") {
		return Package{}, false
	}
	pkg, ok := components[path.Base(repo)]
	if !ok {
		return Package{}, false
	}
	p, ok := tagVersion(pkg, tag)
	if ok {
		p.From = "image " + ref
	}
	return p, ok
}

// tagVersion reads a version from an image tag or a values version:
// "v1.17.3-ubuntu20.04" is 1.17.3, "v1.17.0-rc.1" is 1.17.0~rc.1 (before
// 1.17.0), "550.54.15-5.15.0-1042-azure-ubuntu22.04" is 550.54.15.
func tagVersion(pkg, tag string) (Package, bool) {
	raw := tag
	v := strings.TrimPrefix(strings.TrimPrefix(tag, "v"), "V")
	if i := strings.IndexByte(v, '-'); i >= 0 {
		rest := v[i+1:]
		v = v[:i]
		for _, pre := range []string{"rc", "beta", "alpha"} {
			if strings.HasPrefix(rest, pre) {
				v += "~" + strings.SplitN(rest, "-", 2)[0]
			}
		}
	}
	if strings.Contains(tag, "devel") || !rules.ValidVersion(rules.EcosystemNVIDIA, v) || strings.IndexByte(v, '.') < 0 {
		return Package{}, false
	}
	return Package{Ecosystem: rules.EcosystemNVIDIA, Name: pkg, Version: v, Raw: raw}, true
}

// chartFile reads a Helm chart's Chart.yaml: the GPU Operator's or device
// plugin's own (appVersion, else version), or a chart that depends on one.
func (w *walker) chartFile(n *yaml.Node) {
	if pkg, ok := charts[scalar(get(n, "name"))]; ok {
		for _, key := range []string{"appVersion", "version"} {
			vn := get(n, key)
			if p, ok := tagVersion(pkg, scalar(vn)); ok {
				p.Line, p.From = vn.Line, "Helm chart "+scalar(get(n, "name"))+" "+key+" "+scalar(vn)
				w.add(p)
				break
			}
		}
	}
	deps := get(n, "dependencies")
	if deps == nil || deps.Kind != yaml.SequenceNode {
		return
	}
	for _, d := range deps.Content {
		pkg, ok := charts[scalar(get(d, "name"))]
		vn := get(d, "version")
		if !ok || vn == nil {
			continue
		}
		if p, ok := tagVersion(pkg, scalar(vn)); ok {
			p.Line, p.From = vn.Line, "Helm dependency "+scalar(get(d, "name"))+" "+scalar(vn)
			w.add(p)
		}
	}
}

// hostFile reads a host file (`mlwarden cuda host`): its driver and
// container toolkit versions.
func (w *walker) hostFile(n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode || get(n, "driver_version") == nil {
		return false
	}
	var h cuda.HostFacts
	if n.Decode(&h) != nil || h.Normalize() != nil {
		return false
	}
	w.hostFacts(n, h, "host file")
	return true
}

func (w *walker) hostFacts(n *yaml.Node, h cuda.HostFacts, from string) {
	line := func(key string) int {
		if v := get(n, key); v != nil {
			return v.Line
		}
		return n.Line
	}
	w.add(Package{Ecosystem: rules.EcosystemNVIDIA, Name: rules.PkgDriver, Version: h.DriverVersion, Raw: h.DriverVersion,
		Line: line("driver_version"), From: from})
	if v := h.ContainerToolkitVersion; v != "" {
		w.add(Package{Ecosystem: rules.EcosystemNVIDIA, Name: rules.PkgContainerToolkit, Version: v, Raw: v,
			Line: line("container_toolkit_version"), From: from + ", toolkit in " + h.ContainerToolkitMode + " mode"})
	}
}

// inventory reads a cuda inventory: inline hosts, and host files beside it
// through the target's file system.
func (w *walker) inventory(n *yaml.Node) bool {
	pools := get(n, "pools")
	if n.Kind != yaml.MappingNode || pools == nil || pools.Kind != yaml.SequenceNode {
		return false
	}
	found := false
	for _, p := range pools.Content {
		name := scalar(get(p, "name"))
		if hn := get(p, "host"); hn != nil {
			var h cuda.HostFacts
			if hn.Decode(&h) == nil && h.Normalize() == nil {
				w.hostFacts(hn, h, "inventory pool "+name)
				found = true
			}
			continue
		}
		hf := get(p, "host_file")
		if hf == nil || w.a.FS == nil {
			continue
		}
		data, err := readNeighbour(w.a.FS, path.Join(path.Dir(w.a.Path), scalar(hf)))
		if err != nil {
			continue
		}
		h, err := cuda.ParseHost(data)
		if err != nil {
			continue
		}
		w.hostFacts(hf, h, "inventory pool "+name+" (host file "+scalar(hf)+")")
		found = true
	}
	return found
}

// readNeighbour reads a small regular file of the target.
func readNeighbour(fsys fs.FS, name string) ([]byte, error) {
	name = strings.TrimPrefix(path.Clean(name), "/")
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fs.ErrInvalid
	}
	return io.ReadAll(io.LimitReader(f, maxMetadata))
}

// condaEnv reads a conda environment file: conda pins (name=version,
// name==version, channel::name=version=build) and its pip section.
func condaEnv(data []byte) []Package {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	deps := get(doc.Content[0], "dependencies")
	if deps == nil || deps.Kind != yaml.SequenceNode {
		return nil
	}
	var out []Package
	for _, d := range deps.Content {
		d = resolve(d)
		if pip := get(d, "pip"); pip != nil && pip.Kind == yaml.SequenceNode {
			for _, r := range pip.Content {
				if name, v, ok := pinned(scalar(r)); ok {
					out = append(out, pypi(name, v, r.Line, "pip requirement "+clip(scalar(r), 80)))
				}
			}
			continue
		}
		spec := scalar(d)
		if i := strings.LastIndex(spec, "::"); i >= 0 {
			spec = spec[i+2:]
		}
		name, rest, ok := strings.Cut(spec, "=")
		if !ok {
			continue
		}
		rest = strings.TrimPrefix(rest, "=")
		v, _, _ := strings.Cut(rest, "=")
		v = strings.TrimSpace(v)
		if v == "" || strings.ContainsAny(v, "*<>|, ") {
			continue
		}
		out = append(out, pypi(condaName(strings.TrimSpace(name)), v, d.Line, "conda dependency "+clip(scalar(d), 80)))
	}
	return out
}
