// Package slurm reads Slurm batch scripts the way sbatch does and reports the
// #SBATCH directives a user believes apply but that Slurm ignores, truncates
// or refuses (rules misconfig/sbatch-*).
//
// Parse is the reader: other checks that look at directives (pins reads
// --container-image) can use it so that they see what Slurm sees.
package slurm

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
)

// Rules of this check.
var (
	RuleDirectiveIgnored = scanners.Rule{
		ID: "misconfig/sbatch-directive-ignored", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "#SBATCH directive that sbatch ignores",
		Why:   "sbatch reads #SBATCH only at the start of a line, in capitals, before the first command; the job runs without the option the author believes it has",
		Fix:   "move the directive above the first command, unindented, spelled #SBATCH",
	}
	RuleValueTruncated = scanners.Rule{
		ID: "misconfig/sbatch-value-truncated", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "#SBATCH value cut short by '#'",
		Why:   "an unescaped '#' in an #SBATCH line starts a comment, so Slurm receives only the part before it (registry.example.com#nvidia/pytorch becomes registry.example.com)",
		Fix:   `quote the value ("registry.example.com#nvidia/pytorch:24.01-py3") or escape the '#' as \#`,
	}
	RuleInvalid = scanners.Rule{
		ID: "misconfig/sbatch-invalid", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "batch script that sbatch refuses",
		Why:   "sbatch rejects the script before the job is queued",
		Fix:   "fix the directive as the message says",
	}
)

// Scanner is the sbatch directive check. It is safe for concurrent use.
type Scanner struct {
	env   []string
	args  []string
	popts []ParseOption
}

// Option configures a Scanner.
type Option func(*Scanner)

// WithEnv gives the environment the job is submitted with ("NAME=value";
// SBATCH_* and _SLURM_SPANK_OPTION_* are read, the rest ignored), so that
// the check judges the effective job.
func WithEnv(env []string) Option { return func(s *Scanner) { s.env = env } }

// WithArgs gives the options passed to sbatch on its command line.
func WithArgs(args []string) Option { return func(s *Scanner) { s.args = args } }

// WithSpank adds the options of SPANK plugins installed on the cluster
// (pyxis' are built in), so that their directives are not reported as
// unrecognized.
func WithSpank(specs ...OptionSpec) Option {
	return func(s *Scanner) { s.popts = append(s.popts, WithSpankOptions(specs...)) }
}

// New returns the sbatch directive check.
func New(opts ...Option) *Scanner {
	s := &Scanner{}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Check returns "misconfig".
func (s *Scanner) Check() string { return scanners.CheckMisconfig }

// Rules lists the misconfig/sbatch-* rules.
func (s *Scanner) Rules() []scanners.Rule {
	return []scanners.Rule{RuleDirectiveIgnored, RuleValueTruncated, RuleInvalid}
}

// maxScript bounds what is read of one script: Slurm's own default limit
// (SchedulerParameters max_script_size) is 4 MiB.
const maxScript = 4 << 20

// Wants reports whether a is a batch script: a script target, or a text file
// whose head carries an #SBATCH-like line.
func (s *Scanner) Wants(a *scanners.Artifact, head []byte) bool {
	if a.Kind != scanners.ArtifactFile && a.Kind != "" {
		return false
	}
	if a.TargetKind == scanners.KindScript {
		return true
	}
	if a.Size > maxScript || scanners.IsBinary(head) {
		return false
	}
	switch path.Ext(scanners.Base(a.Path)) {
	case ".sbatch", ".slurm":
		return true
	case ".py", ".md", ".rst", ".txt", ".html", ".ipynb", ".json", ".yaml", ".yml":
		// Documentation and code that mention #SBATCH are not scripts.
		return false
	}
	// A script that submits jobs through here-documents (sbatch <<EOF)
	// holds batch scripts of its own, wherever they are in it.
	return bytes.HasPrefix(head, []byte("#!")) && (IsBatchScript(head) || bytes.Contains(head, []byte("sbatch")))
}

// IsBatchScript reports whether head holds an #SBATCH directive, in any
// spelling, at the start of some line.
func IsBatchScript(head []byte) bool {
	for rest := head; len(rest) > 0; {
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, nil
		}
		if bytes.HasPrefix(line, []byte("#SBATCH")) || (bytes.IndexByte(line, '#') >= 0 && looksLikeDirective(string(line))) {
			return true
		}
	}
	return false
}

// Scan reads one batch script.
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	data, _, err := scanners.ReadAll(c, maxScript)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", a.Path, err)
	}
	if a.TargetKind != scanners.KindScript && !isBatchName(a.Path) && !IsBatchScript(data[:min(len(data), scanners.HeadSize)]) {
		// Not a batch script itself (submit.sh): only the jobs it submits.
		return s.jobs(a, data, 0), nil
	}
	return s.ScanScript(a, data), nil
}

func isBatchName(p string) bool {
	switch path.Ext(scanners.Base(p)) {
	case ".sbatch", ".slurm":
		return true
	}
	return false
}

// ScanScript reports the directives of one script that Slurm ignores,
// truncates or refuses, judged with the scanner's environment and
// command-line options.
func (s *Scanner) ScanScript(a *scanners.Artifact, data []byte) []scanners.Finding {
	return s.scanScript(a, data, 0)
}

// maxJobDepth bounds how deep jobs submitted by jobs are read.
const maxJobDepth = 4

func (s *Scanner) scanScript(a *scanners.Artifact, data []byte, depth int) []scanners.Finding {
	sc := Parse(data, s.popts...)
	var out []scanners.Finding
	for _, ig := range sc.Ignored {
		f := scanners.At(a, RuleDirectiveIgnored, ig.Line, fmt.Sprintf(
			"'%s' is ignored by Slurm: %s, so the job runs without it — move it above the first command, unindented, spelled #SBATCH (or write ##SBATCH to disable it on purpose)",
			Evidence(ig.Text), ig.Reason))
		f.Evidence = Evidence(ig.Text)
		out = append(out, f)
	}
	for _, d := range sc.Directives {
		if d.Truncated == nil {
			continue
		}
		t := d.Truncated
		f := scanners.At(a, RuleValueTruncated, d.Line, fmt.Sprintf(
			"'%s' reaches Slurm as '%s': an unescaped '#' starts a comment in an #SBATCH line — quote the value (%s) or escape the '#' as \\#",
			Evidence(t.Written), Evidence(t.Read), Evidence(quoteValue(t.Written))))
		f.Evidence = Evidence(t.Written)
		out = append(out, f)
	}
	probs := sc.Problems
	if len(s.env) > 0 || len(s.args) > 0 {
		_, ap := sc.Effective(s.env, s.args, s.popts...)
		probs = append(probs, ap...)
	}
	for _, p := range probs {
		out = append(out, ProblemFinding(a, p, data))
	}
	// A job submitted through a here-document (sbatch <<EOF) is a batch
	// script of its own, read by sbatch as this one is.
	return append(out, s.jobs(a, data, depth)...)
}

// jobs reports the batch scripts that data submits through here-documents,
// at data's lines.
func (s *Scanner) jobs(a *scanners.Artifact, data []byte, depth int) []scanners.Finding {
	if depth >= maxJobDepth {
		return nil
	}
	var out []scanners.Finding
	for _, j := range Jobs(data) {
		for _, f := range (&Scanner{popts: s.popts}).scanScript(a, j.Script, depth+1) {
			if f.Line > 0 {
				f.Line += j.Line - 1
			}
			f.Message += fmt.Sprintf(" (in the job script sbatch reads from the here-document at line %d)", j.Line)
			out = append(out, f)
		}
	}
	return out
}

// ProblemFinding is the misconfig/sbatch-invalid finding for p, located at a;
// data is the script, for the evidence (nil for a command-line problem).
func ProblemFinding(a *scanners.Artifact, p Problem, data []byte) scanners.Finding {
	msg := "sbatch refuses this script: " + redactSecrets(p.Message)
	if p.Fix != "" {
		msg += " — " + redactSecrets(p.Fix)
	}
	f := scanners.At(a, RuleInvalid, p.Line, msg)
	if p.Line > 0 && data != nil {
		f.Evidence = Evidence(lineAt(data, p.Line))
	}
	return f
}

// quoteValue quotes an option's value: --x=a#b becomes --x="a#b".
func quoteValue(w string) string {
	if name, val, ok := strings.Cut(w, "="); ok && strings.HasPrefix(name, "-") {
		return name + "=\"" + val + "\""
	}
	return "\"" + w + "\""
}

func lineAt(data []byte, n int) string {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return ""
		}
		data = data[j+1:]
	}
	if j := bytes.IndexByte(data, '\n'); j >= 0 {
		data = data[:j]
	}
	return string(data)
}

// Evidence is how a script's text appears in a finding: trimmed, bounded so
// that a hostile line cannot flood a report, and with anything that may be a
// credential redacted (a directive can carry one, as in
// --export=HF_TOKEN=...), since a secret's value never appears whole.
func Evidence(s string) string {
	s = redactSecrets(strings.TrimSpace(s))
	const max = 160
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}

// secretish matches what may be a credential: a long run of letters and
// digits (tokens, keys; image references and paths have separators), or the
// value of a variable whose name says it holds one.
var secretish = lazyregexp.New(`(?i)((?:token|secret|passw(?:or)?d|api_?key|access_?key|auth|credential)[a-z0-9_]*=)([^\s,'"]+)|[A-Za-z0-9]{20,}`)

func redactSecrets(s string) string {
	return secretish.ReplaceAllStringFunc(s, func(m string) string {
		if sub := secretish.FindStringSubmatch(m); sub[1] != "" {
			return sub[1] + scanners.Redact(sub[2])
		}
		return scanners.Redact(m)
	})
}
