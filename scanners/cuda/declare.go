package cuda

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/slurm"
)

// Declared is everything a target (or one artifact of it) says about the CUDA
// it needs.
type Declared struct {
	// CUDA is the highest CUDA major.minor declared ("" when none).
	CUDA string
	// Evidence lists every declaration, in order of discovery.
	Evidence []Evidence
	// Env is the image environment, when one was seen (an image config or
	// --env): its NVIDIA_REQUIRE_* variables are evaluated as the container
	// toolkit does.
	Env *ImageEnv
	// CompatDrivers are the driver versions of the CUDA forward-compatibility
	// libraries the image ships (/usr/local/cuda*/compat/libcuda.so.<ver>).
	CompatDrivers []string
	// Arch is the TORCH_CUDA_ARCH_LIST, when one was seen.
	Arch *ArchList
	// NoPTX is true when the CUDA came from a PyTorch binary build, whose
	// wheels carry cubins only (no PTX a newer GPU could JIT-compile).
	NoPTX bool
	// Undeclared lists places that use CUDA without saying which version.
	Undeclared []Evidence
	// FromImage is set when the declarations include an image's config, so
	// that the image's files were walked too: what the image does not ship
	// (forward-compatibility libraries) is known to be absent. It is unset
	// when only an environment is described (--env).
	FromImage bool
}

// Evidence is one place that declares (or uses) CUDA.
type Evidence struct {
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
	// What is the declaration as written, e.g. "torch==2.4.0+cu121".
	What string `json:"what"`
	// CUDA is the major.minor it declares ("" for undeclared uses).
	CUDA string `json:"cuda,omitempty"`
}

// Empty reports whether nothing at all was found.
func (d *Declared) Empty() bool {
	return d.CUDA == "" && d.Env == nil && len(d.CompatDrivers) == 0 && d.Arch == nil && len(d.Undeclared) == 0 && len(d.Evidence) == 0
}

func (d *Declared) add(e Evidence) {
	d.Evidence = append(d.Evidence, e)
	if e.CUDA != "" && (d.CUDA == "" || vcmp(e.CUDA, d.CUDA) > 0) {
		d.CUDA = e.CUDA
	}
}

// Merge adds o's declarations to d (for facts spread over several artifacts
// of one target, such as an image's config and its files).
func (d *Declared) Merge(o Declared) {
	d.FromImage = d.FromImage || o.FromImage
	for _, e := range o.Evidence {
		d.add(e)
	}
	if o.Env != nil {
		if d.Env == nil {
			d.Env = o.Env
		} else {
			// Two environments (an image config and --env): the later wins
			// per variable, as in a Dockerfile.
			env := mergeEnv(d.Env, o.Env)
			d.Env = &env
		}
	}
	for _, c := range o.CompatDrivers {
		if !slices.Contains(d.CompatDrivers, c) {
			d.CompatDrivers = append(d.CompatDrivers, c)
		}
	}
	if o.Arch != nil {
		d.Arch = o.Arch
	}
	d.NoPTX = d.NoPTX || o.NoPTX
	d.Undeclared = append(d.Undeclared, o.Undeclared...)
}

func mergeEnv(a, b *ImageEnv) ImageEnv {
	vars := a.vars()
	for k, v := range b.vars() {
		vars[k] = v
	}
	return imageEnvFromMap(vars)
}

// vars rebuilds the variables an ImageEnv was made from.
func (e *ImageEnv) vars() map[string]string {
	m := map[string]string{}
	for k, v := range e.raw {
		m[k] = v
	}
	return m
}

// ArchList is a parsed TORCH_CUDA_ARCH_LIST.
type ArchList struct {
	Raw     string
	Targets []ArchTarget
	// Unknown holds entries that are not X.Y[a|f][+PTX] (e.g. "Ampere").
	Unknown []string
}

// ArchTarget is one entry: a cubin for Major.Minor (arch-specific "a" or
// family "f" when set), plus PTX when PTX is true.
type ArchTarget struct {
	Major, Minor int
	Suffix       string // "", "a" or "f"
	PTX          bool
}

func (t ArchTarget) String() string {
	s := fmt.Sprintf("%d.%d%s", t.Major, t.Minor, t.Suffix)
	if t.PTX {
		s += "+PTX"
	}
	return s
}

var archEntryRe = lazyregexp.New(`^(\d+)\.(\d+)([af]?)(\+PTX)?$`)

// ParseArchList reads a TORCH_CUDA_ARCH_LIST value (space- or
// semicolon-separated).
func ParseArchList(s string) *ArchList {
	l := &ArchList{Raw: s}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ';' || r == ',' || r == '\t' }) {
		m := archEntryRe.FindStringSubmatch(f)
		if m == nil {
			l.Unknown = append(l.Unknown, f)
			continue
		}
		maj, _ := strconv.Atoi(m[1])
		min, _ := strconv.Atoi(m[2])
		l.Targets = append(l.Targets, ArchTarget{Major: maj, Minor: min, Suffix: m[3], PTX: m[4] != ""})
	}
	return l
}

// Runs reports whether some entry has code a GPU of compute capability
// cc can run, and whether it needs PTX JIT compilation for it.
func (l *ArchList) Runs(cc string) (runs, viaPTX bool) {
	maj, min := ccParts(cc)
	for _, t := range l.Targets {
		switch t.Suffix {
		case "a":
			if maj == t.Major && min == t.Minor {
				return true, false
			}
			continue // arch-specific code runs nowhere else, PTX included
		default: // plain cubins, and "f" family cubins: same major, minor >= Y
			if maj == t.Major && min >= t.Minor {
				return true, false
			}
		}
	}
	for _, t := range l.Targets {
		if t.PTX && t.Suffix == "" && (maj > t.Major || maj == t.Major && min >= t.Minor) {
			return true, true
		}
	}
	return false, false
}

func ccParts(cc string) (int, int) {
	a, b, _ := strings.Cut(cc, ".")
	maj, _ := strconv.Atoi(a)
	min, _ := strconv.Atoi(b)
	return maj, min
}

// cuTag turns a wheel tag's digits ("121", "118", "130", "92") into "12.1".
func cuTag(d string) (string, bool) {
	if len(d) < 2 || len(d) > 4 {
		return "", false
	}
	return majorMinor(d[:len(d)-1] + "." + d[len(d)-1:])
}

// Patterns over text files. They are matched per line.
var (
	// torch==2.4.0+cu121, torchvision==0.19.0+cu121 (any +cuXYZ local version).
	pipCUTagRe = lazyregexp.New(`(?i)^\s*([a-z0-9][a-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:===?|~=|>=)\s*[0-9][0-9a-z.!*]*\+cu(\d{2,4})\b`)
	// --index-url https://pypi.example.com/whl/cu128 (also --extra-index-url, -i, find-links).
	pipIndexRe = lazyregexp.New(`(?i)(?:--(?:extra-)?index-url|-i|--find-links|-f)[ =]\S*/whl/(?:nightly/)?cu(\d{2,4})\b`)
	// nvidia-cuda-runtime-cu12==12.4.127, nvidia-cuda-runtime==13.0.96, cuda-toolkit[cublas]==13.0.2
	pipRuntimeRe = lazyregexp.New(`(?i)^\s*(nvidia-cuda-runtime(?:-cu(\d+))?|cuda-toolkit)(?:\[[^\]]*\])?\s*(?:===?|~=|>=)\s*(\d+\.\d+)`)
	// torch / pytorch without a CUDA variant.
	pipTorchRe = lazyregexp.New(`(?i)^\s*(torch)\s*(?:$|[=<>~!;\[ ])`)
	// conda: - pytorch-cuda=12.1, - cudatoolkit=11.8, - nvidia::cuda-version>=12.4,<13
	condaRe = lazyregexp.New(`(?i)^\s*-?\s*(?:[a-z0-9_-]+::)?(pytorch-cuda|cudatoolkit|cuda-version)\s*(?:==?|>=|~=)?\s*(\d+\.\d+)`)
	// conda without a CUDA pin: - pytorch
	condaTorchRe = lazyregexp.New(`(?i)^\s*-\s*(?:[a-z0-9_-]+::)?(pytorch|pytorch-gpu)\s*(?:$|[=<>\s#])`)
	// module load cuda/12.4, ml CUDA/12.1.1-GCC-12.3.0, module add cudatoolkit/12.2
	moduleRe     = lazyregexp.New(`^\s*(?:module\s+(?:load|add|try-load|try-add)|ml)\s+(.*)$`)
	moduleCUDARe = lazyregexp.New(`(?i)^(cuda|cudatoolkit|cuda-toolkit|nvhpc-cuda)(?:/(\d+(?:\.\d+)*))?`)
	// EasyBuild forward compat: CUDAcompat/11.7-515.65.01
	moduleCompatRe = lazyregexp.New(`(?i)^cudacompat/(\d+\.\d+)-(\d+(?:\.\d+)+)`)
	// export TORCH_CUDA_ARCH_LIST="8.0 9.0+PTX", ENV TORCH_CUDA_ARCH_LIST=..., ARG ...
	archVarRe = lazyregexp.New(`(?:^|\s)(?:export\s+|ENV\s+|ARG\s+)?TORCH_CUDA_ARCH_LIST[= ]\s*["']?([^"'\n#]*)`)
	// Dockerfile: FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04, FROM registry.example.com/nvidia/cuda:13.0.0-base
	fromCUDARe = lazyregexp.New(`(?i)^\s*FROM\s+(?:--\S+\s+)*\S*nvidia/cuda:(\d+\.\d+(?:\.\d+)?)`)

	// Lock files: any PyTorch wheel index path, a quoted version with +cuXYZ,
	// a package name and its version on the following lines.
	lockIndexRe   = lazyregexp.New(`/whl/(?:nightly/)?cu(\d{2,4})\b`)
	lockCUTagRe   = lazyregexp.New(`["'](?:[a-zA-Z0-9._-]+\s*)?(?:[=<>~!]=*)?\s*[0-9][0-9a-z.!]*\+cu(\d{2,4})["']`)
	lockNameRe    = lazyregexp.New(`^\s*(?:name\s*=\s*"([^"]+)"|"([A-Za-z0-9._-]+)"\s*:\s*\{)`)
	lockVersionRe = lazyregexp.New(`^\s*"?version"?\s*[=:]\s*"=*([^"]+)"`)

	// torch/version.py: cuda: Optional[str] = '12.1' / cuda = '12.1' / cuda = None
	torchVersionCUDARe = lazyregexp.New(`^cuda\s*(?::\s*[A-Za-z_.\[\]]+\s*)?=\s*(?:'([^']*)'|"([^"]*)"|(None))`)
	// torch-2.4.0+cu121.dist-info
	torchDistInfoRe = lazyregexp.New(`(?:^|/)torch-[^/]*\+cu(\d{2,4})\.dist-info/`)
	// /usr/local/cuda-12.4/compat/libcuda.so.550.54.15
	compatLibRe = lazyregexp.New(`^/?usr/local/cuda[^/]*/compat/libcuda\.so\.(\d+(?:\.\d+)+)$`)
)

// fileKind says how a file artifact's text is read.
type fileKind int

const (
	kindNone fileKind = iota
	kindPip
	kindConda
	kindScript
	kindDockerfile
	kindTorchVersion
	kindLock     // uv.lock, poetry.lock, pylock.toml, Pipfile.lock, pyproject.toml
	kindPathOnly // the path itself is the declaration
)

// classify decides from the path (and the first bytes for scripts) how to
// read a file.
func classify(p string, head []byte) fileKind {
	if compatLibRe.MatchString(p) || torchDistInfoRe.MatchString(p) && path.Base(p) == "METADATA" {
		return kindPathOnly
	}
	base := scanners.Base(p)
	switch {
	case strings.HasSuffix(p, "/torch/version.py") || p == "torch/version.py":
		return kindTorchVersion
	case strings.HasSuffix(base, ".txt") && (strings.Contains(base, "requirements") || strings.Contains(base, "constraints")),
		base == "requirements.in", strings.HasSuffix(base, "-requirements.in"),
		strings.HasPrefix(p, "requirements/") && strings.HasSuffix(base, ".txt"),
		strings.Contains(p, "/requirements/") && strings.HasSuffix(base, ".txt"):
		return kindPip
	case base == "uv.lock", base == "poetry.lock", base == "pipfile.lock", base == "pyproject.toml",
		base == "pylock.toml", strings.HasPrefix(base, "pylock.") && strings.HasSuffix(base, ".toml"):
		return kindLock
	case (strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".yaml")) &&
		(strings.Contains(base, "environment") || strings.Contains(base, "conda") || base == "env.yml" || base == "env.yaml"):
		return kindConda
	case base == "dockerfile" || strings.HasPrefix(base, "dockerfile.") || strings.HasSuffix(base, ".dockerfile") || base == "containerfile":
		return kindDockerfile
	case strings.HasSuffix(base, ".sh") || strings.HasSuffix(base, ".bash") || strings.HasSuffix(base, ".sbatch") ||
		strings.HasSuffix(base, ".slurm") || strings.HasSuffix(base, ".job") || strings.HasSuffix(base, ".pbs"):
		return kindScript
	}
	if bytes.HasPrefix(head, []byte("#!")) {
		line, _, _ := bytes.Cut(head, []byte("\n"))
		if bytes.Contains(line, []byte("sh")) {
			return kindScript
		}
	}
	return kindNone
}

// maxLine bounds how much of one line is looked at; the rest of a longer
// line is skipped (declarations are short).
const maxLine = 64 << 10

// eachLine calls fn with every line of data (without the newline), cut to
// maxLine bytes.
func eachLine(data []byte, fn func(n int, line string)) {
	n := 0
	for len(data) > 0 {
		n++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > maxLine {
			line = line[:maxLine]
		}
		fn(n, strings.TrimSuffix(string(line), "\r"))
	}
}

// ExtractFile reads what one file says about CUDA. p is its slash path
// inside the target; data its content (nil for path-only declarations).
func ExtractFile(p string, data []byte) Declared {
	var d Declared
	head := data
	if len(head) > scanners.HeadSize {
		head = head[:scanners.HeadSize]
	}
	kind := classify(p, head)
	switch kind {
	case kindNone:
		return d
	case kindPathOnly:
		if m := compatLibRe.FindStringSubmatch(p); m != nil {
			d.CompatDrivers = append(d.CompatDrivers, m[1])
			d.Evidence = append(d.Evidence, Evidence{Path: p, What: "CUDA forward-compatibility library " + path.Base(p)})
		}
		if m := torchDistInfoRe.FindStringSubmatch(p); m != nil {
			if v, ok := cuTag(m[1]); ok {
				d.add(Evidence{Path: path.Dir(p), What: "PyTorch build " + path.Base(path.Dir(p)), CUDA: v})
				d.NoPTX = true
			}
		}
		return d
	}
	if scanners.IsBinary(head) {
		return d
	}
	var torchLines []Evidence // torch pins without a CUDA variant
	indexCUDA := ""
	lockName := ""
	eachLine(data, func(n int, line string) {
		trim := strings.TrimSpace(line)
		if trim == "" {
			return
		}
		if kind == kindTorchVersion {
			if m := torchVersionCUDARe.FindStringSubmatch(trim); m != nil {
				v := m[1] + m[2]
				if m[3] == "None" || v == "" {
					return // a CPU build
				}
				if mm, ok := majorMinor(v); ok {
					d.add(Evidence{Path: p, Line: n, What: "torch.version.cuda = " + v, CUDA: mm})
					d.NoPTX = true
				}
			}
			return
		}
		if strings.HasPrefix(trim, "#") {
			return // comments, and #SBATCH directives: read below as sbatch reads them
		}
		code := stripComment(line)
		switch kind {
		case kindLock:
			if m := lockNameRe.FindStringSubmatch(code); m != nil {
				lockName = strings.ToLower(m[1] + m[2])
			}
			if m := lockIndexRe.FindStringSubmatch(code); m != nil {
				if v, ok := cuTag(m[1]); ok {
					indexCUDA = v
					d.add(Evidence{Path: p, Line: n, What: strings.TrimSpace(code), CUDA: v})
					d.NoPTX = true
				}
				return
			}
			if m := lockCUTagRe.FindStringSubmatch(code); m != nil {
				if v, ok := cuTag(m[1]); ok {
					d.add(Evidence{Path: p, Line: n, What: strings.TrimSpace(code), CUDA: v})
					d.NoPTX = d.NoPTX || lockName == "torch" || strings.Contains(code, "torch")
				}
				return
			}
			// pyproject.toml lists requirements as quoted pip strings.
			if pip := strings.Trim(strings.TrimSpace(code), `"',`); pipRuntimeRe.MatchString(pip) {
				m := pipRuntimeRe.FindStringSubmatch(pip)
				if v, ok := majorMinor(m[3]); ok && (m[2] == "" || strconv.Itoa(majorOf(v)) == m[2]) {
					d.add(Evidence{Path: p, Line: n, What: pip, CUDA: v})
				}
				return
			}
			if m := lockVersionRe.FindStringSubmatch(code); m != nil && lockName != "" {
				if mr := pipRuntimeRe.FindStringSubmatch(lockName + "==" + m[1]); mr != nil {
					if v, ok := majorMinor(mr[3]); ok && (mr[2] == "" || strconv.Itoa(majorOf(v)) == mr[2]) {
						d.add(Evidence{Path: p, Line: n, What: lockName + " " + m[1], CUDA: v})
					}
				}
			}
		case kindPip, kindConda:
			// conda files carry pip sections: read pip lines in both.
			pipLine := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(code), "- "))
			if m := pipCUTagRe.FindStringSubmatch(pipLine); m != nil {
				if v, ok := cuTag(m[2]); ok {
					d.add(Evidence{Path: p, Line: n, What: strings.TrimSpace(pipLine), CUDA: v})
					if strings.EqualFold(m[1], "torch") {
						d.NoPTX = true
					}
					return
				}
			}
			if m := pipIndexRe.FindStringSubmatch(code); m != nil {
				if v, ok := cuTag(m[1]); ok {
					indexCUDA = v
					d.add(Evidence{Path: p, Line: n, What: strings.TrimSpace(code), CUDA: v})
					d.NoPTX = true
				}
				return
			}
			if m := pipRuntimeRe.FindStringSubmatch(pipLine); m != nil {
				v, ok := majorMinor(m[3])
				if ok && (m[2] == "" || strconv.Itoa(majorOf(v)) == m[2]) {
					d.add(Evidence{Path: p, Line: n, What: strings.TrimSpace(pipLine), CUDA: v})
				}
				return
			}
			if pipTorchRe.MatchString(pipLine) {
				torchLines = append(torchLines, Evidence{Path: p, Line: n, What: strings.TrimSpace(pipLine)})
				return
			}
			if kind == kindConda {
				if m := condaRe.FindStringSubmatch(code); m != nil {
					if v, ok := majorMinor(m[2]); ok {
						d.add(Evidence{Path: p, Line: n, What: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(code), "-")), CUDA: v})
					}
					return
				}
				if condaTorchRe.MatchString(code) {
					torchLines = append(torchLines, Evidence{Path: p, Line: n, What: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(code), "-"))})
				}
			}
		case kindScript, kindDockerfile:
			if m := moduleRe.FindStringSubmatch(code); m != nil {
				for _, mod := range strings.Fields(m[1]) {
					if mc := moduleCompatRe.FindStringSubmatch(mod); mc != nil {
						d.CompatDrivers = append(d.CompatDrivers, mc[2])
						d.add(Evidence{Path: p, Line: n, What: "module " + mod, CUDA: mc[1]})
						continue
					}
					mc := moduleCUDARe.FindStringSubmatch(mod)
					if mc == nil || len(mc[0]) < len(mod) && mod[len(mc[0])] != '-' && mod[len(mc[0])] != '/' {
						continue
					}
					if mc[2] == "" {
						d.Undeclared = append(d.Undeclared, Evidence{Path: p, Line: n, What: "module load " + mod + " (the site's default CUDA)"})
						continue
					}
					if v, ok := majorMinor(mc[2]); ok {
						d.add(Evidence{Path: p, Line: n, What: "module load " + mod, CUDA: v})
					}
				}
			}
			if m := fromCUDARe.FindStringSubmatch(code); kind == kindDockerfile && m != nil {
				if v, ok := majorMinor(m[1]); ok {
					d.add(Evidence{Path: p, Line: n, What: strings.TrimSpace(code), CUDA: v})
				}
			}
			if m := archVarRe.FindStringSubmatch(code); m != nil && strings.TrimSpace(m[1]) != "" && !strings.Contains(m[1], "$") {
				d.Arch = ParseArchList(strings.TrimSpace(m[1]))
				d.Evidence = append(d.Evidence, Evidence{Path: p, Line: n, What: "TORCH_CUDA_ARCH_LIST=" + strings.TrimSpace(m[1])})
			}
		}
	})
	if d.CUDA == "" && indexCUDA == "" {
		d.Undeclared = append(d.Undeclared, torchLines...)
	}
	if kind == kindScript && bytes.Contains(data, []byte("#SBATCH")) {
		sbatchExports(&d, p, data)
	}
	return d
}

// sbatchExports reads TORCH_CUDA_ARCH_LIST from a batch script's
// --export directives, through the slurm package's reading of #SBATCH
// lines (the one reader: a value cut at an unescaped '#' is cut here too).
func sbatchExports(d *Declared, p string, data []byte) {
	for _, st := range slurm.Parse(data).Settings {
		if st.Name != "export" || st.Source != slurm.FromScript {
			continue
		}
		for _, kv := range strings.Split(st.Value, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "TORCH_CUDA_ARCH_LIST="); ok && v != "" && !strings.Contains(v, "$") {
				v = strings.Trim(v, `"'`)
				d.Arch = ParseArchList(v)
				d.Evidence = append(d.Evidence, Evidence{Path: p, Line: st.Line, What: "#SBATCH --export TORCH_CUDA_ARCH_LIST=" + v})
			}
		}
	}
}

// stripComment drops a trailing " # comment" (pip, conda and shell syntax).
func stripComment(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		return line[:i]
	}
	if i := strings.Index(line, "\t#"); i >= 0 {
		return line[:i]
	}
	return line
}

// ociConfig is the part of an OCI/Docker image config the check reads.
type ociConfig struct {
	Config struct {
		Env []string `json:"Env"`
	} `json:"config"`
}

// ExtractImageConfig reads the CUDA declarations of an image config blob.
func ExtractImageConfig(data []byte) (Declared, error) {
	var c ociConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return Declared{}, fmt.Errorf("parse image config: %w", err)
	}
	return ExtractEnv(c.Config.Env, "image config"), nil
}

// ExtractEnv reads the CUDA declarations of an environment ("KEY=VALUE").
// where names it in evidence ("image config", "--env").
func ExtractEnv(env []string, where string) Declared {
	var d Declared
	e := ParseImageEnv(env)
	if arch, ok := lookupEnv(env, "TORCH_CUDA_ARCH_LIST"); ok && strings.TrimSpace(arch) != "" {
		d.Arch = ParseArchList(arch)
		d.Evidence = append(d.Evidence, Evidence{Path: where, What: "TORCH_CUDA_ARCH_LIST=" + arch})
	}
	if e.CUDAVersion == "" && len(e.Requirements) == 0 && !e.Disabled {
		if _, ok := lookupEnv(env, "NVIDIA_VISIBLE_DEVICES"); ok {
			d.Undeclared = append(d.Undeclared, Evidence{Path: where, What: "NVIDIA_VISIBLE_DEVICES set without CUDA_VERSION or NVIDIA_REQUIRE_CUDA"})
		}
		return d
	}
	d.Env = &e
	if e.CUDAVersion != "" {
		if mm, ok := majorMinor(e.CUDAVersion); ok {
			d.add(Evidence{Path: where, What: "CUDA_VERSION=" + e.CUDAVersion, CUDA: mm})
		} else {
			d.Evidence = append(d.Evidence, Evidence{Path: where, What: "CUDA_VERSION=" + e.CUDAVersion})
		}
	}
	for _, r := range e.Requirements {
		if r.Var == "CUDA_VERSION" {
			continue
		}
		ev := Evidence{Path: where, What: r.Var + "=" + r.Expr}
		if d.CUDA == "" {
			if v := firstCUDAFloor(r.Expr); v != "" {
				ev.CUDA = v
			}
		}
		d.add(ev)
	}
	return d
}

// firstCUDAFloor returns X.Y of the first cuda>=X.Y factor.
func firstCUDAFloor(expr string) string {
	for _, t := range strings.Split(expr, " ") {
		for _, f := range strings.Split(t, ",") {
			if len(f) > 6 && strings.EqualFold(f[:6], "cuda>=") {
				if mm, ok := majorMinor(f[6:]); ok {
					return mm
				}
			}
		}
	}
	return ""
}

func lookupEnv(env []string, key string) (string, bool) {
	val, found := "", false
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val, found = v, true
		}
	}
	return val, found
}
