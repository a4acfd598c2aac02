//go:build !mlwarden_sbatch

package misconfig

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Slurm's configuration files (slurm.conf, cgroup.conf, gres.conf) share
// one grammar, read by Slurm's s_p_parse_file: lines of Key=Value pairs,
// keys in any case, '#' to the end of the line a comment (\# a literal
// '#'), a trailing backslash joining the next line, and "Include FILE"
// lines that read another file in place. No Go library reads it, hence
// this one.

// Bounds of one configuration and the files it includes.
const (
	maxSlurmDepth = 8        // nested Include levels
	maxSlurmFiles = 64       // files read for one configuration
	maxSlurmBytes = 16 << 20 // bytes read for one configuration
	maxNotes      = 20       // includes not followed, reported per file
)

// slurmKV is one Key=Value, at the file and line its key is written on.
type slurmKV struct {
	key, value string
	path       string
	line       int
}

// slurmLine is one logical line (continuations joined).
type slurmLine []slurmKV

// get returns the value of key (any case) on the line.
func (l slurmLine) get(key string) (slurmKV, bool) {
	for _, kv := range l {
		if strings.EqualFold(kv.key, key) {
			return kv, true
		}
	}
	return slurmKV{}, false
}

// slurmNote is an Include that was not followed, and why.
type slurmNote struct {
	path string
	line int
	msg  string
}

// slurmConf is a configuration read with its includes.
type slurmConf struct {
	global map[string]slurmKV // lower-cased key: the last value set outside blocks
	blocks []slurmLine        // NodeName, PartitionName, NodeSet, DownNodes, FrontendName lines
	lines  []slurmLine        // every logical line, in order
	notes  []slurmNote
	files  int
	bytes  int
}

// blockKeys start a line that describes one object rather than setting
// global keys.
var blockKeys = map[string]bool{"nodename": true, "partitionname": true, "nodeset": true, "downnodes": true, "frontendname": true, "switchname": true}

func (c *slurmConf) value(key string) (slurmKV, bool) {
	kv, ok := c.global[strings.ToLower(key)]
	return kv, ok
}

// blocksOf returns the lines whose first key is key (NodeName, PartitionName).
func (c *slurmConf) blocksOf(key string) []slurmLine {
	var out []slurmLine
	for _, b := range c.blocks {
		if strings.EqualFold(b[0].key, key) {
			out = append(out, b)
		}
	}
	return out
}

// parseSlurm reads one file's logical lines: each line's pairs go to line,
// each Include to include (its argument and line).
func parseSlurm(data []byte, file string, line func(slurmLine), include func(arg string, ln int)) {
	var buf strings.Builder
	var starts []int // offset in buf where each physical line of the logical line starts
	first := 0       // physical line number of starts[0]
	flush := func() {
		text := buf.String()
		buf.Reset()
		if strings.TrimSpace(text) == "" {
			starts = starts[:0]
			return
		}
		lineAt := func(off int) int {
			// The last physical line starting at or before off (binary
			// search: a hostile file joins a million lines into one).
			i, found := slices.BinarySearch(starts, off)
			if !found {
				i--
			}
			for i+1 < len(starts) && starts[i+1] == starts[i] {
				i++ // empty continued lines start at the same offset
			}
			return first + max(i, 0)
		}
		if arg, ok := includeArg(text); ok {
			include(arg, lineAt(0))
		} else if kvs := slurmPairs(text, file, lineAt); len(kvs) > 0 {
			line(kvs)
		}
		starts = starts[:0]
	}
	eachLine(data, func(n int, raw string) bool {
		s := strings.TrimRight(stripSlurmComment(raw), " \t\r")
		if len(starts) == 0 {
			first = n
		}
		starts = append(starts, buf.Len())
		if strings.HasSuffix(s, `\`) {
			buf.WriteString(s[:len(s)-1])
			return true
		}
		buf.WriteString(s)
		flush()
		return true
	})
	if len(starts) > 0 {
		flush()
	}
}

// stripSlurmComment cuts s at its first '#' that is not escaped (\#
// stands for '#').
func stripSlurmComment(s string) string {
	if !strings.Contains(s, "#") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '#':
			b.WriteByte('#')
			i++
		case s[i] == '#':
			return b.String()
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// includeArg returns the argument of an "Include FILE" line.
func includeArg(text string) (string, bool) {
	t := strings.TrimLeft(text, " \t")
	if len(t) < 8 || !strings.EqualFold(t[:7], "include") || (t[7] != ' ' && t[7] != '\t') {
		return "", false
	}
	return strings.Trim(strings.TrimSpace(t[8:]), `"`), true
}

// slurmPairs splits a logical line into Key=Value pairs (spaces around
// '=' allowed, values quoted or up to the next space). Words that are not
// pairs are skipped.
func slurmPairs(text, file string, lineAt func(int) int) slurmLine {
	var out slurmLine
	i := 0
	for i < len(text) {
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
		start := i
		for i < len(text) && isKeyByte(text[i]) {
			i++
		}
		key := text[start:i]
		j := i
		for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
			j++
		}
		if key == "" || j >= len(text) || text[j] != '=' {
			// Not a pair: skip the word.
			for i < len(text) && text[i] != ' ' && text[i] != '\t' {
				i++
			}
			if i == start {
				i++
			}
			continue
		}
		j++
		for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
			j++
		}
		var val string
		if j < len(text) && text[j] == '"' {
			end := strings.IndexByte(text[j+1:], '"')
			if end < 0 {
				val, i = text[j+1:], len(text)
			} else {
				val, i = text[j+1:j+1+end], j+2+end
			}
		} else {
			k := j
			for k < len(text) && text[k] != ' ' && text[k] != '\t' {
				k++
			}
			val, i = text[j:k], k
		}
		out = append(out, slurmKV{key: key, value: val, path: file, line: lineAt(start)})
	}
	return out
}

func isKeyByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

// readSlurm reads the configuration in data (at file inside fsys) and
// the files it includes, through fsys only (nil: includes are not
// followed, and a note says so).
func readSlurm(fsys fs.FS, file string, data []byte) *slurmConf {
	c := &slurmConf{global: map[string]slurmKV{}}
	c.read(fsys, file, data, 0)
	return c
}

func (c *slurmConf) read(fsys fs.FS, file string, data []byte, depth int) {
	c.files++
	c.bytes += len(data)
	parseSlurm(data, file, func(l slurmLine) {
		c.lines = append(c.lines, l)
		if blockKeys[strings.ToLower(l[0].key)] {
			c.blocks = append(c.blocks, l)
			return
		}
		for _, kv := range l {
			c.global[strings.ToLower(kv.key)] = kv
		}
	}, func(arg string, ln int) {
		c.include(fsys, file, arg, ln, depth)
	})
}

// include reads an Include's file: an absolute name is looked up from the
// target's root (a node's tree) and then beside the including file (a
// repository's copy of /etc/slurm), a relative one beside the including
// file, as Slurm does.
func (c *slurmConf) include(fsys fs.FS, from, arg string, ln, depth int) {
	note := func(format string, args ...any) {
		if len(c.notes) >= maxNotes {
			return
		}
		c.notes = append(c.notes, slurmNote{path: from, line: ln, msg: fmt.Sprintf("Include %s: ", arg) + fmt.Sprintf(format, args...)})
	}
	switch {
	case arg == "":
		return
	case fsys == nil:
		note("not followed (the target is not on local disk); keys set there were not judged")
		return
	case depth+1 > maxSlurmDepth:
		note("not followed: more than %d nested includes", maxSlurmDepth)
		return
	case c.files >= maxSlurmFiles:
		note("not followed: more than %d files included", maxSlurmFiles)
		return
	}
	cands := includeCandidates(from, arg)
	for _, p := range cands {
		info, err := fs.Stat(fsys, p)
		if err != nil {
			continue
		}
		if !info.Mode().IsRegular() {
			note("%s is not a regular file; not read", p)
			return
		}
		left := maxSlurmBytes - c.bytes
		if info.Size() > int64(left) {
			note("not read: the configuration and its includes pass %d bytes", maxSlurmBytes)
			return
		}
		data, err := readLimited(fsys, p, int64(left))
		if err != nil {
			note("%v", err)
			return
		}
		c.read(fsys, p, data, depth+1)
		return
	}
	note("not found in the target (looked for %s); keys set there were not judged", strings.Join(cands, ", "))
}

// includeCandidates are the paths inside the target an Include may name.
func includeCandidates(from, arg string) []string {
	dir := path.Dir(from)
	var out []string
	add := func(p string) {
		p = path.Clean(p)
		if fs.ValidPath(p) && p != "." {
			for _, q := range out {
				if q == p {
					return
				}
			}
			out = append(out, p)
		}
	}
	if path.IsAbs(arg) {
		add(strings.TrimLeft(arg, "/"))
	} else {
		add(path.Join(dir, arg))
	}
	add(path.Join(dir, path.Base(arg)))
	return out
}

// readLimited reads at most limit bytes of name in fsys.
func readLimited(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is longer than %d bytes; not read", name, limit)
	}
	return data, nil
}

// listHas reports whether a comma list (TaskPlugin, PrologFlags) holds
// one of words, in any case.
func listHas(list string, words ...string) bool {
	for _, w := range strings.Split(list, ",") {
		w = strings.TrimSpace(w)
		for _, x := range words {
			if strings.EqualFold(w, x) {
				return true
			}
		}
	}
	return false
}

// gresNames returns the names in a Gres= value (gpu:a100:4,shard:8 →
// gpu, shard), lower-cased.
func gresNames(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if i := strings.IndexAny(e, ":("); i >= 0 {
			e = e[:i]
		}
		if e != "" {
			out = append(out, strings.ToLower(e))
		}
	}
	return out
}

// slurmNotes reports the includes that were not followed.
func (r *nodeRun) slurmNotes(c *slurmConf) {
	for _, n := range c.notes {
		r.note(n.path, n.line, n.msg)
	}
}

// missing says where a key that is not set was looked for.
func (c *slurmConf) missing(key string) string {
	s := key + " is not set"
	if c.files > 1 {
		s += " (nor in the files it includes)"
	}
	if len(c.notes) > 0 {
		s += "; an Include could not be read, which may set it"
	}
	return s
}

// slurm judges a slurm.conf and keeps what the cgroup.conf and gres.conf
// beside it are judged with.
func (r *nodeRun) slurm(data []byte) {
	c := readSlurm(r.a.FS, r.a.Path, data)
	r.slurmNotes(c)
	r.facts.Slurmish = true
	file := r.a.Path
	high, med := scanners.SeverityHigh, scanners.SeverityMedium
	if kv, ok := c.value("TaskPlugin"); !ok {
		r.add(RuleSlurmTaskCgroupMissing, high, file, 0, "TaskPlugin unset", c.missing("TaskPlugin"))
	} else if !listHas(kv.value, "task/cgroup", "cgroup") {
		r.add(RuleSlurmTaskCgroupMissing, high, kv.path, kv.line, kv.key+"="+kv.value, kv.key+"="+kv.value+" has no task/cgroup")
	}
	if kv, ok := c.value("ProctrackType"); ok && listHas(kv.value, "proctrack/linuxproc", "proctrack/pgid", "linuxproc", "pgid") {
		r.add(RuleSlurmProctrackWeak, med, kv.path, kv.line, kv.key+"="+kv.value, kv.key+"="+kv.value)
	}
	if kv, ok := c.value("PrologFlags"); !ok {
		r.add(RuleSlurmSSHOutsideAllocation, high, file, 0, "PrologFlags unset", c.missing("PrologFlags")+", so no job has an extern step for pam_slurm_adopt to adopt ssh logins into")
	} else if !listHas(kv.value, "contain", "x11", "runinjob") {
		r.add(RuleSlurmSSHOutsideAllocation, high, kv.path, kv.line, kv.key+"="+kv.value, kv.key+"="+kv.value+" has no Contain, so no job has an extern step for pam_slurm_adopt to adopt ssh logins into")
	}
	gpu, sharing, ok := slurmGRES(c)
	if !ok {
		return // no GPU GRES: the GPU rules do not apply
	}
	r.facts.Slurm = append(r.facts.Slurm, slurmFact{site: r.site(), GPUPath: gpu.path, GPULine: gpu.line, GPUWhat: gpu.key + "=" + gpu.value})
	if kv, ok := c.value("AccountingStorageEnforce"); !ok {
		r.add(RuleSlurmAccountingUnenforced, med, file, 0, "AccountingStorageEnforce unset", c.missing("AccountingStorageEnforce")+" on a cluster that schedules GPUs")
	} else if !listHas(kv.value, "limits", "safe") {
		r.add(RuleSlurmAccountingUnenforced, med, kv.path, kv.line, kv.key+"="+kv.value, kv.key+"="+kv.value+" enforces no limits on a cluster that schedules GPUs")
	}
	if sharing.key != "" {
		if why := sharedNodes(c); why != "" {
			r.add(RuleSlurmGPUSharing, med, sharing.path, sharing.line, sharing.key+"="+sharing.value,
				sharing.key+"="+sharing.value+" shares GPUs between jobs, and "+why)
		}
	}
}

// slurmGRES returns where a configuration declares GPU GRES (GresTypes,
// or a NodeName line's Gres) and shard or MPS sharing.
func slurmGRES(c *slurmConf) (gpu, sharing slurmKV, ok bool) {
	consider := func(kv slurmKV) {
		for _, name := range gresNames(kv.value) {
			switch name {
			case "gpu":
				if !ok {
					gpu, ok = kv, true
				}
			case "shard", "mps":
				if sharing.key == "" || strings.EqualFold(sharing.key, "GresTypes") {
					sharing = kv // a node's line says more than GresTypes
				}
			}
		}
	}
	if kv, found := c.value("GresTypes"); found {
		consider(kv)
	}
	for _, n := range c.blocksOf("NodeName") {
		if kv, found := n.get("Gres"); found {
			consider(kv)
		}
	}
	return gpu, sharing, ok
}

// sharedNodes says why the cluster's nodes run jobs of several users at
// once, or "" when every partition is exclusive to one user or job.
func sharedNodes(c *slurmConf) string {
	if kv, ok := c.value("SelectType"); ok && strings.EqualFold(kv.value, "select/linear") {
		return "" // whole nodes per job
	}
	exclusive := func(l slurmLine) (bool, bool) {
		if kv, ok := l.get("ExclusiveUser"); ok {
			return strings.EqualFold(kv.value, "yes"), true
		}
		for _, k := range []string{"OverSubscribe", "Shared"} {
			if kv, ok := l.get(k); ok {
				return strings.EqualFold(kv.value, "exclusive"), true
			}
		}
		return false, false
	}
	def := false
	var shared []string
	parts := 0
	for _, p := range c.blocksOf("PartitionName") {
		name := p[0].value
		ex, set := exclusive(p)
		if strings.EqualFold(name, "default") {
			if set {
				def = ex
			}
			continue
		}
		parts++
		if !set {
			ex = def
		}
		if !ex {
			shared = append(shared, name)
		}
	}
	switch {
	case parts == 0:
		return "no partition is exclusive to one user (ExclusiveUser=YES)"
	case len(shared) == 0:
		return ""
	}
	if len(shared) > 3 {
		shared = append(shared[:3], fmt.Sprintf("%d more", len(shared)-3))
	}
	return "partitions " + strings.Join(shared, ", ") + " run jobs of several users on one node (no ExclusiveUser=YES or OverSubscribe=EXCLUSIVE)"
}

// cgroup keeps what a cgroup.conf says about device fencing.
func (r *nodeRun) cgroup(data []byte) {
	c := readSlurm(r.a.FS, r.a.Path, data)
	r.slurmNotes(c)
	r.facts.Slurmish = true
	f := cgroupFact{site: r.site()}
	if kv, ok := c.value("ConstrainDevices"); ok {
		f.Devices, f.DevicesPath, f.DevicesLine = kv.value, kv.path, kv.line
	}
	if kv, ok := c.value("CgroupPlugin"); ok && strings.EqualFold(kv.value, "disabled") {
		f.Disabled, f.PluginPath, f.PluginLine = true, kv.path, kv.line
	}
	r.facts.Cgroup = append(r.facts.Cgroup, f)
}

// gres judges a gres.conf's gpu lines: each needs File= (MultipleFiles=)
// or AutoDetect, on the line or on an AutoDetect line for all nodes or
// for the same NodeName.
func (r *nodeRun) gres(data []byte) {
	c := readSlurm(r.a.FS, r.a.Path, data)
	r.slurmNotes(c)
	r.facts.Slurmish = true
	f := gresFact{site: r.site()}
	detect := map[string]bool{} // NodeName ("" all): AutoDetect on
	for _, l := range c.lines {
		if _, named := l.get("Name"); named {
			continue
		}
		if kv, ok := l.get("AutoDetect"); ok {
			nodes, _ := l.get("NodeName")
			on := !strings.EqualFold(kv.value, "off")
			detect[strings.ToLower(nodes.value)] = on
			f.AutoDetect = f.AutoDetect || on
		}
	}
	for _, l := range c.lines {
		name, named := l.get("Name")
		if !named || !strings.EqualFold(name.value, "gpu") {
			continue
		}
		f.GPU = true
		if _, ok := l.get("File"); ok {
			continue
		}
		if _, ok := l.get("MultipleFiles"); ok {
			continue
		}
		nodes, _ := l.get("NodeName")
		if kv, ok := l.get("AutoDetect"); ok {
			if !strings.EqualFold(kv.value, "off") {
				f.AutoDetect = true
				continue
			}
		} else if on, ok := detect[strings.ToLower(nodes.value)]; ok && on || !ok && detect[""] {
			continue
		}
		what := "Name=gpu"
		if t, ok := l.get("Type"); ok {
			what += " Type=" + t.value
		}
		r.add(RuleSlurmGRESUnfenced, scanners.SeverityHigh, name.path, name.line, what, what+" has no File= and AutoDetect is off")
	}
	r.facts.Gres = append(r.facts.Gres, f)
}
