// Package pins is the pins check: it reports container images, packages,
// models, datasets and scripts fetched by a name that somebody else can move
// (a tag, a version range, a branch) instead of by an immutable digest, an
// exact version with hashes, or a commit.
//
// Every input is parsed with a real parser that keeps line numbers: BuildKit's
// Dockerfile parser, mvdan.cc/sh for shell and sbatch scripts (and
// scanners/slurm for their #SBATCH directives, read as sbatch reads them),
// a YAML parser
// for manifests and workflows, a TOML parser for pyproject.toml, and a small
// Python tokenizer for Python sources. Nothing is executed.
package pins

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/slurm"
)

// maxInput is the most bytes of one text file the check reads; the rest is
// reported as not scanned.
const maxInput = 8 << 20

// Scanner is the pins check. It is safe for concurrent use.
//
// Files beside an artifact (the lock file next to a pyproject.toml, the files
// a requirements file includes with -r/-c) are read through the artifact's
// FS, the target's root, when its source gives one; without it (images,
// git history, streams) the check sees no neighbours.
type Scanner struct {
	// sbatch are how #SBATCH directives are read (the site's SPANK options).
	sbatch []slurm.ParseOption
}

// Option configures a Scanner.
type Option func(*Scanner)

// WithSpank adds the options of the SPANK plugins installed on the cluster
// (pyxis' are built in), so that #SBATCH directives are read as that
// cluster's sbatch reads them: "--plugin-opt VALUE" takes its value and
// does not end the options before a later --container-image.
func WithSpank(specs ...slurm.OptionSpec) Option {
	return func(s *Scanner) { s.sbatch = append(s.sbatch, slurm.WithSpankOptions(specs...)) }
}

// New returns the pins check.
func New(opts ...Option) *Scanner {
	s := &Scanner{}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Check returns "pins".
func (s *Scanner) Check() string { return scanners.CheckPins }

// Rules lists every rule the pins check reports.
func (s *Scanner) Rules() []scanners.Rule {
	out := make([]scanners.Rule, len(allRules))
	copy(out, allRules)
	return out
}

// kind is the input format of an artifact.
type kind int

const (
	kindNone kind = iota
	kindDockerfile
	kindShell
	kindRequirements
	kindPyproject
	kindConda
	kindYAML // Kubernetes, Compose, GitHub Actions or GitLab CI, told by content
	kindPython
	kindApptainer
	kindImageConfig
	kindNotebook
	kindPowerShell
)

// skipDirs are directories inside images that hold installed software
// rather than what the image's author wrote.
var skipDirs = []string{"/site-packages/", "/dist-packages/", "/node_modules/", "/usr/share/", "/usr/lib/", "/usr/include/", "/lib/python", "/.cache/"}

// classify tells the format of an artifact from its path and first bytes.
func classify(a *scanners.Artifact, head []byte) kind {
	if a.Kind == scanners.ArtifactImageConfig {
		return kindImageConfig
	}
	if a.Kind != scanners.ArtifactFile {
		// Patches (lines added in one commit) are fragments: what is pinned
		// is a property of the current tree, not of history.
		return kindNone
	}
	p := "/" + strings.ToLower(a.Path)
	for _, d := range skipDirs {
		if strings.Contains(p, d) {
			return kindNone
		}
	}
	base := scanners.Base(a.Path)
	ext := path.Ext(base)
	if otherLanguage[ext] {
		// dockerfile.go, a test whose strings hold "#SBATCH": source code
		// of another language is never a Dockerfile or a job script.
		return kindNone
	}
	switch {
	case base == "dockerfile" || base == "containerfile" || ext == ".dockerfile" || ext == ".containerfile" ||
		strings.HasPrefix(base, "dockerfile.") || strings.HasPrefix(base, "containerfile.") || strings.HasPrefix(base, "dockerfile-"):
		return kindDockerfile
	case base == "pyproject.toml":
		return kindPyproject
	case ext == ".txt" && (strings.Contains(base, "requirements") || strings.Contains(base, "constraints") || strings.Contains(p, "/requirements/")):
		return kindRequirements
	case (ext == ".yml" || ext == ".yaml") && (strings.HasPrefix(base, "environment") || strings.HasPrefix(base, "conda")):
		return kindConda
	case ext == ".yml" || ext == ".yaml" || base == "kustomization":
		return kindYAML
	case ext == ".py":
		return kindPython
	case ext == ".ipynb":
		return kindNotebook
	case ext == ".def" && (containsFold(head, "bootstrap:")):
		return kindApptainer
	case ext == ".sh" || ext == ".bash" || ext == ".sbatch" || ext == ".slurm" || ext == ".zsh" || ext == ".ksh":
		return kindShell
	case ext == ".ps1" || ext == ".psm1":
		return kindPowerShell
	}
	if scanners.IsBinary(head) {
		return kindNone
	}
	if len(head) > 2 && head[0] == '#' && head[1] == '!' {
		first, _, _ := strings.Cut(string(head[:min(len(head), 128)]), "\n")
		switch {
		case strings.Contains(first, "python"):
			return kindPython
		case strings.Contains(first, "sh"): // sh, bash, zsh, dash, ksh
			return kindShell
		}
	}
	if bytes.HasPrefix(head, []byte("#SBATCH")) || bytes.Contains(head, []byte("\n#SBATCH")) {
		return kindShell
	}
	return kindNone
}

// otherLanguage are extensions of source code and documents that the pins
// check never reads as Dockerfiles, scripts or manifests, whatever their
// name or first lines look like.
var otherLanguage = map[string]bool{
	".go": true, ".rs": true, ".java": true, ".kt": true, ".scala": true, ".c": true, ".cc": true, ".cpp": true,
	".h": true, ".hpp": true, ".cu": true, ".js": true, ".mjs": true, ".ts": true, ".tsx": true, ".rb": true,
	".php": true, ".cs": true, ".swift": true, ".lua": true, ".md": true, ".rst": true, ".adoc": true, ".html": true,
}

func containsFold(b []byte, s string) bool {
	return strings.Contains(strings.ToLower(string(b)), s)
}

// Wants says whether the artifact is an input the pins check reads.
func (s *Scanner) Wants(a *scanners.Artifact, head []byte) bool {
	return classify(a, head) != kindNone
}

// Scan examines one artifact.
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	head := make([]byte, min(c.Size(), scanners.HeadSize))
	if _, err := c.ReadAt(head, 0); err != nil && len(head) > 0 && int64(len(head)) < c.Size() {
		return nil, fmt.Errorf("read: %w", err)
	}
	k := classify(a, head)
	if k == kindNone {
		return nil, nil
	}
	data, truncated, err := scanners.ReadAll(c, maxInput)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	out := &sink{a: a, seen: map[string]bool{}}
	r := out.whole()
	if truncated {
		r.add(ruleUnparsed, 0, "", fmt.Sprintf("only the first %d bytes of this %d-byte file were checked for pins; split it or check the rest by hand", maxInput, c.Size()))
	}
	s.scanKind(ctx, k, a, data, r)
	return out.list, nil
}

// scanKind runs the parser for kind k on data.
func (s *Scanner) scanKind(ctx context.Context, k kind, a *scanners.Artifact, data []byte, r *rep) {
	switch k {
	case kindDockerfile:
		scanDockerfile(data, r)
	case kindShell:
		scanShellFile(ctx, data, r, isSbatch(a, data), s.sbatch...)
	case kindRequirements:
		s.scanRequirementsFile(ctx, a, data, r)
	case kindPyproject:
		s.scanPyproject(a, data, r)
	case kindConda:
		scanConda(data, r)
	case kindYAML:
		scanYAML(a, data, r)
	case kindPython:
		scanPython(data, r)
	case kindApptainer:
		scanApptainerDef(data, r)
	case kindImageConfig:
		scanImageConfig(data, r)
	case kindNotebook:
		scanNotebook(data, r)
	case kindPowerShell:
		scanPowerShell(string(data), r, nil)
	}
}

func isSbatch(a *scanners.Artifact, data []byte) bool {
	ext := path.Ext(scanners.Base(a.Path))
	return ext == ".sbatch" || ext == ".slurm" || strings.Contains(string(data[:min(len(data), 64<<10)]), "#SBATCH")
}

// sink collects one artifact's findings, once each.
type sink struct {
	a    *scanners.Artifact
	list []scanners.Finding
	seen map[string]bool
}

// rep reports findings into a sink, mapping parser lines to artifact lines:
// a shell script embedded in a Dockerfile RUN, a YAML run: block or an image
// history entry reports at the line of its host file.
type rep struct {
	s *sink
	// line maps a 1-based line of the parsed text to the artifact's line; nil
	// means identity.
	line func(int) int
	// where is appended to messages ("in image history entry 3").
	where string
	// cmd, when it has words, is the simple command being checked: a finding at its
	// first line whose evidence is one of its words is reported at that
	// word's line (a continued command's seventh line), the first line
	// named in the message.
	cmd cmdWords
	// entry, when set, is the line of a file that a loop is being checked
	// with: a finding about it is reported where the script writes it
	// (or says which line of the file it is).
	entry *loopEntry
}

// cmdWords are the words of one simple command and the line it starts on,
// in the coordinates of the text being parsed.
type cmdWords struct {
	first int
	words []arg
}

// lineOf is the line of the word evidence names: the first word that is
// it, else the first that holds it; words that did not come from shell
// (exec-form RUN) have no line of their own.
func (c *cmdWords) lineOf(evidence string) (int, bool) {
	if l, ok := c.wordLine(evidence); ok {
		return l, true
	}
	// Evidence that names several words ("curl, wget"): the first.
	if f := strings.Fields(evidence); len(f) > 1 {
		return c.wordLine(strings.TrimRight(f[0], ",;"))
	}
	return 0, false
}

func (c *cmdWords) wordLine(evidence string) (int, bool) {
	for pass := 0; pass < 2; pass++ {
		for _, a := range c.words {
			if a.w == nil {
				continue
			}
			if a.s == evidence || pass == 1 && strings.Contains(a.s, evidence) {
				return line(a.w.Pos()), true
			}
		}
	}
	return 0, false
}

// inCommand returns a reporter for the findings of one simple command,
// which places them at the line of the word they are about.
func (r *rep) inCommand(first int, words []arg) *rep {
	if r == nil {
		return nil
	}
	multi := false
	for _, a := range words {
		if a.w != nil && line(a.w.End()) != first {
			multi = true
			break
		}
	}
	if !multi {
		return r // one line: nothing to place
	}
	return &rep{s: r.s, line: r.line, where: r.where, entry: r.entry, cmd: cmdWords{first: first, words: words}}
}

func (s *sink) whole() *rep { return &rep{s: s} }

// sub returns a reporter for text embedded in the artifact: line 1 of the
// text is artifact line first, or every line is 0 when first is 0.
func (r *rep) sub(first int, where string) *rep {
	parent := r
	return &rep{s: r.s, where: strings.TrimSpace(r.where + " " + where), line: func(l int) int {
		if first <= 0 {
			return 0
		}
		return parent.mapLine(first + l - 1)
	}}
}

// subMap returns a reporter whose lines go through m first.
func (r *rep) subMap(m func(int) int) *rep {
	parent := r
	return &rep{s: r.s, where: r.where, line: func(l int) int { return parent.mapLine(m(l)) }}
}

func (r *rep) mapLine(l int) int {
	if r.line == nil {
		return l
	}
	return r.line(l)
}

// add records one finding. evidence is what was matched (a reference, a
// requirement); msg says what, why and how to fix it.
func (r *rep) add(rule scanners.Rule, line int, evidence, msg string) {
	if r.cmd.words != nil && line == r.cmd.first && evidence != "" {
		if wl, ok := r.cmd.lineOf(evidence); ok {
			if at, first := r.mapLine(wl), r.mapLine(line); at > 0 && at != first {
				msg += fmt.Sprintf(" (in the command that starts at line %d)", first)
				line = wl
			}
		}
	}
	line = r.mapLine(line)
	if e := r.entry; e != nil && evidence != "" && e.names(evidence) {
		if e.line > 0 {
			line = e.line
		}
		msg += " (" + e.note + ")"
	}
	if r.where != "" {
		msg += " (" + r.where + ")"
	}
	key := fmt.Sprintf("%s\x00%d\x00%s\x00%s", rule.ID, line, evidence, msg)
	if r.s.seen[key] {
		return
	}
	r.s.seen[key] = true
	f := scanners.At(r.s.a, rule, line, msg)
	f.Evidence = evidence
	r.s.list = append(r.s.list, f)
}
