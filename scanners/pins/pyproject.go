package pins

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/mlwarden/mlwarden/scanners"
)

// lockFiles are the lock files that pin a pyproject.toml's ranges.
var lockFiles = []string{"uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock", "pylock.toml"}

type pyprojectFile struct {
	Project struct {
		Dependencies         []string            `toml:"dependencies"`
		OptionalDependencies map[string][]string `toml:"optional-dependencies"`
	} `toml:"project"`
	DependencyGroups map[string][]any `toml:"dependency-groups"`
	Tool             struct {
		Poetry struct {
			Dependencies map[string]any `toml:"dependencies"`
			Group        map[string]struct {
				Dependencies map[string]any `toml:"dependencies"`
			} `toml:"group"`
		} `toml:"poetry"`
	} `toml:"tool"`
}

// lineOf returns the 1-based line of the first occurrence of needle, or 0.
func lineOf(data []byte, needle string) int {
	i := strings.Index(string(data), needle)
	if i < 0 {
		return 0
	}
	return strings.Count(string(data[:i]), "\n") + 1
}

// hasLock reports whether a lock file sits beside the artifact, and whether
// the check could look at all.
func (s *Scanner) hasLock(a *scanners.Artifact) (found, known bool) {
	if a.FS == nil {
		return false, false
	}
	dir := path.Dir(a.Path)
	for _, l := range lockFiles {
		if _, err := fs.Stat(a.FS, path.Join(dir, l)); err == nil {
			return true, true
		}
	}
	if m, _ := fs.Glob(a.FS, path.Join(dir, "pylock.*.toml")); len(m) > 0 {
		return true, true
	}
	return false, true
}

// scanPyproject checks dependencies in pyproject.toml: ranges are fine when a
// lock file sits beside it; VCS dependencies need a commit without one.
func (s *Scanner) scanPyproject(a *scanners.Artifact, data []byte, r *rep) {
	var p pyprojectFile
	if _, err := toml.Decode(string(data), &p); err != nil {
		line := 0
		if pe, ok := err.(toml.ParseError); ok {
			line = pe.Position.Line
		}
		r.add(ruleUnparsed, line, "", fmt.Sprintf("pyproject.toml could not be parsed (%v), so its dependencies were not checked for pins; fix the syntax", err))
		return
	}
	type dep struct{ spec string }
	var deps []dep
	for _, d := range p.Project.Dependencies {
		deps = append(deps, dep{spec: d})
	}
	for _, k := range sortedKeys(p.Project.OptionalDependencies) {
		for _, d := range p.Project.OptionalDependencies[k] {
			deps = append(deps, dep{spec: d})
		}
	}
	for _, k := range sortedKeys(p.DependencyGroups) {
		for _, d := range p.DependencyGroups[k] {
			if s, ok := d.(string); ok {
				deps = append(deps, dep{spec: s})
			}
		}
	}
	poetry := func(m map[string]any) {
		for _, name := range sortedKeys(m) {
			if name == "python" {
				continue
			}
			switch v := m[name].(type) {
			case string:
				deps = append(deps, dep{spec: poetrySpec(name, v)})
			case map[string]any:
				if g, ok := v["git"].(string); ok {
					rev, _ := v["rev"].(string)
					if rev == "" {
						rev, _ = v["tag"].(string)
					}
					if rev == "" {
						rev, _ = v["branch"].(string)
					}
					spec := name + " @ git+" + g
					if rev != "" {
						spec += "@" + rev
					}
					deps = append(deps, dep{spec: spec})
				} else if ver, ok := v["version"].(string); ok {
					deps = append(deps, dep{spec: poetrySpec(name, ver)})
				}
			}
		}
	}
	poetry(p.Tool.Poetry.Dependencies)
	for _, g := range sortedKeys(p.Tool.Poetry.Group) {
		poetry(p.Tool.Poetry.Group[g].Dependencies)
	}
	locked, known := s.hasLock(a)
	if locked {
		return // the lock file pins ranges and VCS commits alike
	}
	var ranges []string
	firstLine := 0
	for _, d := range deps {
		v, _, ref := judgeReq(d.spec)
		switch v {
		case reqVCSUnpinned:
			r.add(ruleVCSUnpinned, lineOf(data, strings.SplitN(d.spec, " @ ", 2)[0]), d.spec, vcsMessage(d.spec, ref)+" (or commit a lock file beside pyproject.toml)")
		case reqUnpinned:
			if firstLine == 0 {
				firstLine = lineOf(data, strings.TrimSpace(strings.SplitN(d.spec, " ", 2)[0]))
			}
			ranges = append(ranges, d.spec)
		}
	}
	if len(ranges) == 0 {
		return
	}
	seen := "no lock file (uv.lock, poetry.lock, pdm.lock, Pipfile.lock, pylock.toml) sits beside it"
	if !known {
		seen = "no lock file beside it could be seen (for this target the check reads one file at a time)"
	}
	shown := ranges[:min(3, len(ranges))]
	more := ""
	if len(ranges) > 3 {
		more = fmt.Sprintf(" and %d more", len(ranges)-3)
	}
	r.add(rulePyprojectNoLock, firstLine, strings.Join(shown, ", "), fmt.Sprintf("%s (%s%s) and %s, so an install gets whatever is newest that day; commit a lock file (uv lock, poetry lock, pdm lock) and install from it (uv sync --locked)", plural(len(ranges), "dependency uses a range", "dependencies use ranges"), strings.Join(shown, ", "), more, seen))
}

// poetrySpec turns a Poetry constraint into PEP 508 form: "1.2.3" and
// "==1.2.3" are exact; "^1.2", "~1.2", "*" and ranges are not.
func poetrySpec(name, c string) string {
	c = strings.TrimSpace(c)
	if c != "" && c[0] >= '0' && c[0] <= '9' && !strings.ContainsAny(c, "*,<>") {
		return name + "==" + c
	}
	if c == "" || c == "*" {
		return name
	}
	return name + strings.NewReplacer("^", ">=", "~", "~=").Replace(c)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
