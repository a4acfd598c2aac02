package vulns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
)

// Read limits. Package databases and manifests are text; a dpkg status of
// a large image is a few MB; dist-info headers come first.
const (
	maxText      = 16 << 20
	maxMetadata  = 256 << 10
	maxAdvisFile = 16 << 20
)

// fileKind is how the check reads a file.
type fileKind int

const (
	kindNone         fileKind = iota
	kindDpkg                  // /var/lib/dpkg/status, /var/lib/dpkg/status.d/*
	kindDistInfo              // *.dist-info/METADATA, *.egg-info/PKG-INFO
	kindCondaMeta             // conda-meta/*.json
	kindRequirements          // requirements*.txt, constraints
	kindTOMLLock              // poetry.lock, uv.lock, pylock*.toml
	kindPipfileLock           // Pipfile.lock
	kindPyproject             // pyproject.toml
	kindCondaEnv              // environment.yml and the like
	kindYAML                  // Helm values, charts, manifests, host files
	kindJSON                  // host files and manifests in JSON
	kindPython                // torch.load calls
)

// classify decides from the path alone how a file is read.
func classify(p string) fileKind {
	p = strings.TrimPrefix(p, "/")
	base := scanners.Base(p)
	dir := path.Dir(p)
	switch {
	case p == "var/lib/dpkg/status" || strings.HasSuffix(p, "/var/lib/dpkg/status"):
		return kindDpkg
	case path.Base(dir) == "status.d" && strings.HasSuffix(dir, "var/lib/dpkg/status.d") && !strings.HasSuffix(base, ".md5sums"):
		return kindDpkg
	case base == "metadata" && strings.HasSuffix(dir, ".dist-info"),
		base == "pkg-info" && strings.HasSuffix(dir, ".egg-info"),
		strings.HasSuffix(base, ".egg-info"):
		return kindDistInfo
	case path.Base(dir) == "conda-meta" && strings.HasSuffix(base, ".json"):
		return kindCondaMeta
	case strings.HasSuffix(base, ".txt") && (strings.Contains(base, "requirements") || strings.Contains(base, "constraints")),
		base == "requirements.in", strings.HasSuffix(base, "-requirements.in"),
		path.Base(dir) == "requirements" && strings.HasSuffix(base, ".txt"):
		return kindRequirements
	case base == "poetry.lock" || base == "uv.lock" || base == "pylock.toml" || strings.HasPrefix(base, "pylock.") && strings.HasSuffix(base, ".toml"):
		return kindTOMLLock
	case base == "pipfile.lock":
		return kindPipfileLock
	case base == "pyproject.toml":
		return kindPyproject
	}
	ext := path.Ext(base)
	switch {
	case (ext == ".yml" || ext == ".yaml") && (strings.HasPrefix(base, "environment") || strings.HasPrefix(base, "conda") || base == "env.yml" || base == "env.yaml"):
		return kindCondaEnv
	case ext == ".yml" || ext == ".yaml":
		return kindYAML
	case ext == ".json":
		return kindJSON
	case ext == ".py" || ext == ".ipynb":
		if strings.Contains(p, "site-packages/") || strings.Contains(p, "dist-packages/") {
			return kindNone // library code, not the target's own calls
		}
		return kindPython
	}
	return kindNone
}

// Wants takes the files that declare versions (package databases, Python
// metadata, requirements and lock files, YAML manifests and values, host
// files) and Python sources (for torch.load calls).
func (s *Scanner) Wants(a *scanners.Artifact, head []byte) bool {
	if a.Kind != scanners.ArtifactFile {
		return false
	}
	switch classify(a.Path) {
	case kindNone:
		return false
	case kindJSON:
		// Host files, inventories, and manifests that name NVIDIA images.
		return bytes.Contains(head, []byte(`"driver_version"`)) || bytes.Contains(head, []byte(`"pools"`)) ||
			bytes.Contains(head, []byte("nvidia"))
	}
	return true
}

// extract reads the packages one file declares.
func extract(k fileKind, a *scanners.Artifact, data []byte) []Package {
	switch k {
	case kindDpkg:
		return dpkgPackages(data)
	case kindDistInfo:
		return distInfo(data)
	case kindCondaMeta:
		return condaMeta(data)
	case kindRequirements:
		return requirements(data)
	case kindTOMLLock:
		return tomlLock(data)
	case kindPipfileLock:
		return pipfileLock(data)
	case kindPyproject:
		return pyproject(data)
	case kindCondaEnv:
		return condaEnv(data)
	case kindYAML, kindJSON:
		return manifests(a, data)
	}
	return nil
}

// eachLine calls fn with every line of data (1-based, without the line end).
func eachLine(data []byte, fn func(n int, line string) bool) {
	for n, line := range scanners.Lines(data) {
		if !fn(n, strings.TrimSuffix(string(line), "\r")) {
			return
		}
	}
}

// --- dpkg -----------------------------------------------------------------

// NVIDIA's toolkit packages: four per release, one version
// (container-toolkit release notes).
var toolkitDebs = []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"}

// Driver packages: Debian's nvidia-driver, Ubuntu's nvidia-driver-NNN
// (-server, -open), NVIDIA's cuda-drivers and nvidia-open meta packages.
var driverDeb = lazyregexp.New(`^(nvidia-driver(-[0-9]+)?(-server)?(-open)?|cuda-drivers(-[0-9]+)?|nvidia-open(-[0-9]+)?)$`)

// debProduct maps a dpkg package name to the advisory table's package.
func debProduct(name string) string {
	switch {
	case slices.Contains(toolkitDebs, name):
		return rules.PkgContainerToolkit
	case driverDeb.MatchString(name):
		return rules.PkgDriver
	}
	return ""
}

// dpkgPackages reads a dpkg status file (or one status.d entry) and
// returns the NVIDIA packages installed, one per product and version.
func dpkgPackages(data []byte) []Package {
	type para struct {
		name, version, status string
		line                  int
	}
	var out []Package
	index := map[string]int{} // product+version -> out index
	var cur para
	flush := func() {
		defer func() { cur = para{} }()
		if cur.name == "" || cur.version == "" {
			return
		}
		if cur.status != "" && !strings.HasSuffix(cur.status, " installed") {
			return // removed, config files left, half-installed
		}
		prod := debProduct(cur.name)
		if prod == "" {
			return
		}
		k := prod + "\x00" + cur.version
		if i, ok := index[k]; ok {
			out[i].From += ", " + cur.name
			return
		}
		index[k] = len(out)
		out = append(out, Package{Ecosystem: rules.EcosystemNVIDIA, Name: prod, Version: cur.version, Raw: cur.version,
			Line: cur.line, From: "dpkg packages " + cur.name})
	}
	field := func(line []byte, name string) (string, bool) {
		if len(line) <= len(name) || line[len(name)] != ':' || !bytes.EqualFold(line[:len(name)], []byte(name)) {
			return "", false
		}
		return strings.TrimSpace(string(line[len(name)+1:])), true
	}
	for n, rest := 1, data; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			flush()
			continue
		}
		switch line[0] {
		case 'P', 'p':
			if v, ok := field(line, "package"); ok {
				cur.name, cur.line = v, n
			}
		case 'V', 'v':
			if v, ok := field(line, "version"); ok {
				cur.version = v
			}
		case 'S', 's':
			if v, ok := field(line, "status"); ok {
				cur.status = v
			}
		}
	}
	flush()
	for i := range out {
		if !strings.Contains(out[i].From, ",") {
			out[i].From = strings.Replace(out[i].From, "packages", "package", 1)
		}
	}
	return out
}

// --- Python metadata --------------------------------------------------------

// distInfo reads Name and Version from a METADATA or PKG-INFO file's
// headers.
func distInfo(data []byte) []Package {
	var name, version string
	line := 0
	eachLine(data, func(n int, l string) bool {
		if strings.TrimSpace(l) == "" {
			return false // the headers end at the first blank line
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return true
		}
		switch strings.ToLower(k) {
		case "name":
			name = strings.TrimSpace(v)
		case "version":
			version, line = strings.TrimSpace(v), n
		}
		return name == "" || version == ""
	})
	if name == "" || version == "" {
		return nil
	}
	return []Package{pypi(name, version, line, "installed distribution "+rules.NormalizePyPI(name)+" "+version)}
}

// condaNames maps conda package names to PyPI's where they differ.
var condaNames = map[string]string{"pytorch": "torch"}

func condaName(n string) string {
	n = rules.NormalizePyPI(n)
	if p, ok := condaNames[n]; ok {
		return p
	}
	return n
}

// condaMeta reads a conda-meta/*.json record of an installed package.
func condaMeta(data []byte) []Package {
	var m struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if json.Unmarshal(data, &m) != nil || m.Name == "" || m.Version == "" {
		return nil
	}
	return []Package{pypi(condaName(m.Name), m.Version, 0, "conda package "+m.Name+" "+m.Version)}
}

func pypi(name, version string, line int, from string) Package {
	return Package{Ecosystem: rules.EcosystemPyPI, Name: rules.NormalizePyPI(name), Version: version, Raw: version, Line: line, From: from}
}

// An exact pin in a requirement (PEP 508): name, extras, == or ===, a
// version without wildcards, then markers or other specifiers.
var pinRe = lazyregexp.New(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([0-9A-Za-z!+._-]+)\s*(?:[,;].*)?$`)

// pinned reads an exact pin from one requirement string.
func pinned(req string) (name, version string, ok bool) {
	m := pinRe.FindStringSubmatch(strings.TrimSpace(req))
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// requirements reads exact pins from a pip requirements or constraints
// file. Ranges are not judged: the version installed is not known.
func requirements(data []byte) []Package {
	var out []Package
	start, logical := 0, ""
	eachLine(data, func(n int, l string) bool {
		if logical == "" {
			start = n
		}
		if strings.HasSuffix(l, `\`) {
			logical += strings.TrimSuffix(l, `\`) + " "
			return true
		}
		logical += l
		req := logical
		logical = ""
		if i := strings.Index(req, " #"); i >= 0 {
			req = req[:i]
		}
		if i := strings.Index(req, " --hash"); i >= 0 {
			req = req[:i]
		}
		req = strings.TrimSpace(req)
		if req == "" || req[0] == '#' || req[0] == '-' {
			return true
		}
		if name, v, ok := pinned(req); ok {
			out = append(out, pypi(name, v, start, "requirement "+clip(req, 80)))
		}
		return true
	})
	return out
}

// lineOf is the 1-based line of the first occurrence of needle, 0 if none.
func lineOf(data []byte, needle string) int {
	i := bytes.Index(data, []byte(needle))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// tomlLock reads poetry.lock and uv.lock ([[package]]) and pylock.toml
// ([[packages]]).
func tomlLock(data []byte) []Package {
	type pkg struct {
		Name    string `toml:"name"`
		Version string `toml:"version"`
	}
	var lock struct {
		Package  []pkg `toml:"package"`
		Packages []pkg `toml:"packages"`
	}
	if _, err := toml.Decode(string(data), &lock); err != nil {
		return nil
	}
	var out []Package
	for _, p := range slices.Concat(lock.Package, lock.Packages) {
		if p.Name == "" || p.Version == "" {
			continue
		}
		line := lineOf(data, fmt.Sprintf("name = %q", p.Name))
		out = append(out, pypi(p.Name, p.Version, line, "locked "+p.Name+" "+p.Version))
	}
	return out
}

// pipfileLock reads Pipfile.lock's default and develop sections.
func pipfileLock(data []byte) []Package {
	var lock map[string]json.RawMessage
	if json.Unmarshal(data, &lock) != nil {
		return nil
	}
	var out []Package
	for _, sec := range []string{"default", "develop"} {
		var pkgs map[string]struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(lock[sec], &pkgs) != nil {
			continue
		}
		names := make([]string, 0, len(pkgs))
		for n := range pkgs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			v, ok := strings.CutPrefix(pkgs[n].Version, "==")
			if !ok || v == "" {
				continue
			}
			out = append(out, pypi(n, v, lineOf(data, fmt.Sprintf("%q:", n)), "locked "+n+" "+v))
		}
	}
	return out
}

// pyproject reads exact pins from [project] dependencies, optional
// dependencies, [dependency-groups] and [tool.poetry] dependencies (where a
// bare version is exact).
func pyproject(data []byte) []Package {
	var p struct {
		Project struct {
			Dependencies []string            `toml:"dependencies"`
			Optional     map[string][]string `toml:"optional-dependencies"`
		} `toml:"project"`
		Groups map[string][]any `toml:"dependency-groups"`
		Tool   struct {
			Poetry struct {
				Dependencies    map[string]any `toml:"dependencies"`
				DevDependencies map[string]any `toml:"dev-dependencies"`
			} `toml:"poetry"`
		} `toml:"tool"`
	}
	if _, err := toml.Decode(string(data), &p); err != nil {
		return nil
	}
	var out []Package
	add := func(req string) {
		if name, v, ok := pinned(req); ok {
			out = append(out, pypi(name, v, lineOf(data, req), "requirement "+clip(req, 80)))
		}
	}
	for _, r := range p.Project.Dependencies {
		add(r)
	}
	for _, g := range sortedKeys(p.Project.Optional) {
		for _, r := range p.Project.Optional[g] {
			add(r)
		}
	}
	for _, g := range sortedKeys(p.Groups) {
		for _, r := range p.Groups[g] {
			if s, ok := r.(string); ok {
				add(s)
			}
		}
	}
	for _, deps := range []map[string]any{p.Tool.Poetry.Dependencies, p.Tool.Poetry.DevDependencies} {
		for _, n := range sortedKeys(deps) {
			var v string
			switch d := deps[n].(type) {
			case string:
				v = d
			case map[string]any:
				v, _ = d["version"].(string)
			}
			v = strings.TrimPrefix(strings.TrimSpace(v), "==")
			if v == "" || strings.ContainsAny(v, "^~<>=*,! ") {
				continue // a range
			}
			out = append(out, pypi(n, v, lineOf(data, n+" ="), "poetry dependency "+n+" "+v))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// readFile reads a file a user named, bounded.
func readFile(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxAdvisFile {
		return nil, fmt.Errorf("larger than %d bytes", maxAdvisFile)
	}
	return os.ReadFile(name)
}
