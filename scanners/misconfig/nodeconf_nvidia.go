//go:build !mlwarden_sbatch

package misconfig

import (
	"bytes"
	"path"
	"strings"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

// modOption is one parameter of an "options MODULE key=value…" line of
// modprobe.d(5), or one "Key: value" line of /proc/driver/nvidia/params
// (module "").
type modOption struct {
	module, key, value string
	line               int
}

// parseModprobe reads modprobe.d options lines: '#' lines are comments, a
// trailing backslash joins the next line, values may be double-quoted.
// No Go library reads the format, hence this one.
func parseModprobe(data []byte, opt func(modOption)) {
	joinedLines(data, func(start int, s string) {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "#") {
			return
		}
		w := quotedFields(s)
		if len(w) < 3 || w[0] != "options" {
			return
		}
		for _, kv := range w[2:] {
			k, v, _ := strings.Cut(kv, "=")
			opt(modOption{module: w[1], key: k, value: strings.Trim(v, `"`), line: start})
		}
	})
}

// eachLine calls fn with every line of data and its 1-based number.
func eachLine(data []byte, fn func(n int, line string) bool) {
	n := 0
	for len(data) > 0 {
		n++
		var raw []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			raw, data = data, nil
		}
		if !fn(n, string(raw)) {
			return
		}
	}
}

// joinedLines calls fn with every logical line of data (a trailing
// backslash joins the next line, with a space) and the line it starts on.
func joinedLines(data []byte, fn func(start int, text string)) {
	var joined strings.Builder
	start := 0
	eachLine(data, func(n int, raw string) bool {
		s := strings.TrimRight(raw, " \t\r")
		if joined.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(s, `\`) {
			joined.WriteString(s[:len(s)-1] + " ")
			return true
		}
		joined.WriteString(s)
		fn(start, joined.String())
		joined.Reset()
		return true
	})
	if joined.Len() > 0 {
		fn(start, joined.String())
	}
}

// quotedFields splits s at spaces outside double quotes.
func quotedFields(s string) []string {
	var out []string
	var b strings.Builder
	in, have := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			in, have = !in, true
			b.WriteByte(c)
		case (c == ' ' || c == '\t') && !in:
			if have {
				out = append(out, b.String())
				b.Reset()
				have = false
			}
		default:
			b.WriteByte(c)
			have = true
		}
	}
	if have {
		out = append(out, b.String())
	}
	return out
}

// parseParams reads /proc/driver/nvidia/params: "Key: value" lines.
func parseParams(data []byte, opt func(modOption)) {
	eachLine(data, func(n int, raw string) bool {
		k, v, ok := strings.Cut(raw, ":")
		if ok && strings.TrimSpace(k) != "" {
			opt(modOption{key: strings.TrimSpace(k), value: strings.Trim(strings.TrimSpace(v), `"`), line: n})
		}
		return true
	})
}

// nvidiaModule reports whether a modprobe module name is the NVIDIA
// driver's (nvidia, nvidia-current; '-' and '_' are the same in module
// names), not one of its companions (nvidia_uvm, nvidia_drm).
func nvidiaModule(m string) bool {
	switch strings.ReplaceAll(strings.ToLower(m), "-", "_") {
	case "nvidia", "nvidia_current", "nvidia_current_open", "nvidia_open":
		return true
	}
	return false
}

// profilingOpen reports whether a driver parameter opens the performance
// counters to every user: RestrictProfilingToAdminUsers 0 (RmProfilingAdminOnly
// in params), or RmProfilingAdminOnly=0 in RegistryDwords.
func profilingOpen(key, value string) bool {
	k := strings.TrimPrefix(strings.ToLower(key), "nvreg_")
	switch k {
	case "restrictprofilingtoadminusers", "rmprofilingadminonly":
		return strings.TrimSpace(value) == "0"
	case "registrydwords":
		for _, e := range strings.Split(value, ";") {
			if k, v, ok := strings.Cut(e, "="); ok && strings.EqualFold(strings.TrimSpace(k), "RmProfilingAdminOnly") && isZero(v) {
				return true
			}
		}
	}
	return false
}

func isZero(v string) bool {
	v = strings.TrimSpace(v)
	return v == "0" || strings.EqualFold(v, "0x0") || strings.EqualFold(v, "0x00000000")
}

func (r *nodeRun) modprobe(data []byte) {
	parseModprobe(data, func(o modOption) {
		if nvidiaModule(o.module) && profilingOpen(o.key, o.value) {
			ev := "options " + o.module + " " + o.key + "=" + o.value
			r.add(RuleNVIDIAProfilingUnrestricted, RuleNVIDIAProfilingUnrestricted.Severity, "", o.line, ev, ev)
		}
	})
}

func (r *nodeRun) params(data []byte) {
	parseParams(data, func(o modOption) {
		if profilingOpen(o.key, o.value) {
			ev := o.key + ": " + o.value
			r.add(RuleNVIDIAProfilingUnrestricted, RuleNVIDIAProfilingUnrestricted.Severity, "", o.line, ev, "the loaded driver runs with "+ev)
		}
	})
}

// envvarKey is the container toolkit's setting that lets unprivileged
// containers pick GPUs with NVIDIA_VISIBLE_DEVICES.
const envvarKey = "accept-nvidia-visible-devices-envvar-when-unprivileged"

// toolkit judges the NVIDIA container toolkit's config.toml.
func (r *nodeRun) toolkit(data []byte) {
	var cfg map[string]any
	if _, err := toml.Decode(string(data), &cfg); err != nil {
		r.note("", 0, "not read as the NVIDIA container toolkit's config.toml: "+err.Error())
		return
	}
	v, set := cfg[envvarKey]
	on, isBool := v.(bool)
	switch {
	case !set:
		r.add(RuleContainerToolkitEnvvarDevices, scanners.SeverityMedium, "", 0, envvarKey+" unset (default true)",
			envvarKey+" is not set, and the toolkit's default is true")
	case isBool && on:
		r.add(RuleContainerToolkitEnvvarDevices, RuleContainerToolkitEnvvarDevices.Severity, "", tomlKeyLine(data, envvarKey), envvarKey+" = true",
			envvarKey+" = true")
	}
}

// tomlKeyLine is the line a top-level key is set on (0 when not found).
func tomlKeyLine(data []byte, key string) int {
	at := 0
	eachLine(data, func(n int, raw string) bool {
		s := strings.TrimSpace(raw)
		if strings.HasPrefix(s, "[") {
			return false // past the top-level keys
		}
		if strings.Trim(strings.TrimSpace(strings.SplitN(s, "=", 2)[0]), `"'`) == key {
			at = n
			return false
		}
		return true
	})
	return at
}

// cdi judges a CDI spec's containerEdits (the spec's own and each
// device's): host mounts and device nodes beyond the GPU's own.
func (r *nodeRun) cdi(data []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return // not a spec: other rules read it as text
	}
	top := doc.Content[0]
	kind := mapValue(top, "kind")
	devices := mapValue(top, "devices")
	edits := mapValue(top, "containerEdits")
	if mapValue(top, "cdiVersion") == nil || kind == nil || devices == nil && edits == nil {
		return
	}
	var all []*yaml.Node
	if edits != nil {
		all = append(all, edits)
	}
	if devices != nil && devices.Kind == yaml.SequenceNode {
		for _, d := range devices.Content {
			if e := mapValue(d, "containerEdits"); e != nil {
				all = append(all, e)
			}
		}
	}
	gpu := strings.Contains(strings.ToLower(kind.Value), "gpu") || strings.Contains(strings.ToLower(kind.Value), "nvidia")
	for _, e := range all {
		for _, dn := range seqOf(mapValue(e, "deviceNodes")) {
			if p := hostPathOf(dn, "path"); p != nil && gpuDevice(p.Value) {
				gpu = true
			}
		}
	}
	for _, e := range all {
		for _, dn := range seqOf(mapValue(e, "deviceNodes")) {
			p := hostPathOf(dn, "path")
			if p == nil || gpuDevice(p.Value) {
				continue
			}
			sensitive := sensitiveDevice(p.Value)
			if !sensitive && !gpu {
				continue
			}
			sev := scanners.SeverityMedium
			if sensitive {
				sev = scanners.SeverityHigh
			}
			r.add(RuleCDIHostMount, sev, "", p.Line, "device "+p.Value, "the spec (kind "+kind.Value+") gives containers the host device "+p.Value)
		}
		for _, m := range seqOf(mapValue(e, "mounts")) {
			p := mapValue(m, "hostPath")
			if p == nil || p.Kind != yaml.ScalarNode || gpuFile(p.Value) {
				continue
			}
			sensitive := cdiSensitivePath(p.Value)
			if !sensitive && !gpu {
				continue
			}
			sev := scanners.SeverityMedium
			if sensitive {
				sev = scanners.SeverityHigh
			}
			r.add(RuleCDIHostMount, sev, "", p.Line, "mounts "+p.Value, "the spec (kind "+kind.Value+") mounts the host's "+p.Value+" into containers")
		}
	}
}

// mapValue returns the value of key in a YAML mapping (nil when absent).
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func seqOf(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// hostPathOf is a device node's hostPath, or its path when it has none.
func hostPathOf(n *yaml.Node, fallback string) *yaml.Node {
	for _, k := range []string{"hostPath", fallback} {
		if v := mapValue(n, k); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
			return v
		}
	}
	return nil
}

// gpuDevice reports a GPU's own device node: /dev/nvidia* (nvidiactl,
// nvidia-uvm, nvidia-caps/…), /dev/dri/*, AMD's /dev/kfd.
func gpuDevice(p string) bool {
	p = path.Clean(p)
	return strings.HasPrefix(p, "/dev/nvidia") || p == "/dev/dri" || strings.HasPrefix(p, "/dev/dri/") || p == "/dev/kfd"
}

// sensitiveDevice reports device nodes that give the host away: memory,
// disks, the kernel log.
func sensitiveDevice(p string) bool {
	p = path.Clean(p)
	switch p {
	case "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev", "/dev/mapper", "/dev/fuse":
		return true
	}
	for _, d := range []string{"/dev/sd", "/dev/nvme", "/dev/vd", "/dev/xvd", "/dev/hd", "/dev/loop", "/dev/dm-", "/dev/mapper/", "/dev/md"} {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// gpuFile reports a host path that is the GPU driver's own: a name with
// "nvidia" in it (libEGL_nvidia.so, nvidia-smi, /run/nvidia/driver,
// /etc/vulkan/icd.d/nvidia_icd.json, the persistenced socket) or a CUDA
// driver library (libcuda*, libnv*).
func gpuFile(p string) bool {
	p = strings.ToLower(path.Clean(p))
	if strings.Contains(p, "nvidia") {
		return true
	}
	base := path.Base(p)
	return strings.HasPrefix(base, "libcuda") || strings.HasPrefix(base, "libnv")
}

// cdiSensitivePath reports host paths whose mount gives a container the
// host: the root, system and state directories, home directories, the
// kernel's interfaces and runtime sockets.
func cdiSensitivePath(p string) bool {
	p = path.Clean(p)
	switch p {
	case "/", "/etc", "/root", "/home", "/proc", "/sys", "/boot", "/dev", "/var", "/var/lib", "/run", "/var/run", "/usr", "/bin", "/sbin",
		"/lib", "/lib64", "/usr/lib", "/usr/bin", "/usr/sbin", "/usr/lib64", "/tmp", "/var/log", "/opt":
		return true
	}
	if strings.HasSuffix(p, ".sock") {
		return true
	}
	for _, d := range []string{"/etc/", "/root/", "/home/", "/proc/", "/sys/", "/boot/", "/var/lib/kubelet", "/var/lib/docker", "/var/lib/containerd", "/var/lib/rancher", "/run/containerd", "/var/run/containerd", "/run/docker", "/var/run/docker", "/run/crio", "/var/run/crio", "/var/spool/slurm", "/var/lib/slurm", "/etc"} {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}
