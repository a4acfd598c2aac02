package slurm

import (
	"bytes"
	"fmt"
	"strings"
)

// This file reads a batch script the way sbatch 22.05 does. Hand-written
// because no Go library reads #SBATCH directives with Slurm's own rules; every
// rule below cites the C it mirrors (SchedMD/slurm, src/sbatch/opt.c and
// src/sbatch/sbatch.c).

// Script is a batch script as sbatch reads it.
type Script struct {
	// Shebang is the first line when it starts with "#!".
	Shebang string
	// FirstCommand is the 1-based line of the first command: sbatch reads
	// no directive after it. 0 when the script has none.
	FirstCommand int
	// Directives are the #SBATCH lines sbatch reads, in order.
	Directives []Directive
	// Ignored are #SBATCH-like lines sbatch does not read.
	Ignored []Ignored
	// Problems are what makes sbatch refuse the script.
	Problems []Problem
	// Settings are the options the directives set, in order; a later one
	// overrides an earlier one of the same name.
	Settings []Setting
}

// Directive is one #SBATCH line sbatch reads.
type Directive struct {
	Line int    // 1-based
	Text string // the line as written
	// Component is the heterogeneous-job component (0 unless the script
	// separates components with "#SBATCH hetjob").
	Component int
	// Words are the arguments sbatch hands to getopt_long, unquoted.
	Words []string
	// Truncated is set when an unescaped '#' inside a word cut it short.
	Truncated *Truncation
}

// Truncation is a word an unescaped '#' cut: sbatch reads Read where the
// author wrote Written.
type Truncation struct {
	Read    string
	Written string
}

// Ignored is a line that looks like a directive but that sbatch skips.
type Ignored struct {
	Line   int
	Text   string
	Reason string
}

// Problem is something that makes sbatch refuse the script.
type Problem struct {
	Line int // 0 when not tied to a line (command line, environment)
	// Message is what sbatch says, in its words where it has some.
	Message string
	// Fix says how to fix it.
	Fix string
}

// Source says where a setting came from.
type Source string

// Setting sources, lowest precedence first (sbatch's
// process_options_second_pass: script, then environment, then command line).
const (
	FromScript Source = "script"
	FromEnv    Source = "env"
	FromArgs   Source = "args"
)

// Setting is one option as getopt_long hands it to sbatch.
type Setting struct {
	Name     string // long option name, without dashes
	Value    string
	HasValue bool
	Source   Source
	Line     int    // for FromScript
	Origin   string // for FromEnv: the variable's name
	// Component is the heterogeneous-job component.
	Component int
	// ValueSpan is where Value is written in the directive's line (the
	// Directive.Text of line Line), so that a tool can rewrite the value in
	// place: Text[ValueSpan.Start:ValueSpan.End] is Value, byte for byte. It
	// is the zero Span when the value is empty, comes from outside the
	// script or from the next line, or has a quote or escape inside it.
	ValueSpan Span
	// Truncated is set when an unescaped '#' cut the word that holds the
	// value: Value is what sbatch reads, not what the line says
	// (Directive.Truncated has both).
	Truncated bool
}

// Span is the byte range [Start, End) of a line.
type Span struct {
	Start, End int
}

// ParseOption configures Parse.
type ParseOption func(*parser)

// WithSpankOptions adds the options of SPANK plugins installed on the
// cluster. The pyxis options are always known.
func WithSpankOptions(specs ...OptionSpec) ParseOption {
	return func(p *parser) { p.extra = append(p.extra, specs...) }
}

type parser struct {
	extra []OptionSpec
	table *optionTable
}

// Parse reads script as sbatch does. It never fails: what sbatch would
// refuse is a Problem.
func Parse(script []byte, opts ...ParseOption) *Script {
	p := &parser{extra: append([]OptionSpec(nil), pyxisOptions...)}
	for _, o := range opts {
		o(p)
	}
	p.table = newOptionTable(p.extra)
	return p.parse(script)
}

func (p *parser) parse(script []byte) *Script {
	s := &Script{}
	// sbatch.c, _get_script_buffer: "Batch script is empty!", "does not look
	// like a batch script" unless it starts with "#!", "contains DOS line
	// breaks", and the controller refuses a NUL character.
	switch {
	case len(bytes.TrimSpace(script)) == 0:
		s.Problems = append(s.Problems, Problem{Message: "Batch script is empty!", Fix: "submit a script that starts with #! and the path to an interpreter"})
		return s
	case !bytes.HasPrefix(script, []byte("#!")):
		s.Problems = append(s.Problems, Problem{Line: 1, Message: "This does not look like a batch script. The first line must start with #! followed by the path to an interpreter.", Fix: "start the script with a line such as #!/bin/bash"})
	}
	if i := bytes.Index(script, []byte("\r\n")); i >= 0 {
		s.Problems = append(s.Problems, Problem{Line: 1 + bytes.Count(script[:i], []byte{'\n'}), Message: "Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks (\\n).", Fix: "convert the script with dos2unix"})
	}
	if i := bytes.IndexByte(script, 0); i >= 0 {
		s.Problems = append(s.Problems, Problem{Line: 1 + bytes.Count(script[:i], []byte{'\n'}), Message: "The Slurm controller does not allow scripts that contain a NULL character '\\0'.", Fix: "remove the NUL byte; a batch script must be text"})
	}

	var words []argWord
	component := 0
	var heredoc []heredocEnd
	lineno := 0
	for rest := script; len(rest) > 0; {
		// opt.c, next_line: lines end at '\n' only.
		var raw []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			raw, rest = rest[:i], rest[i+1:]
		} else {
			raw, rest = rest, nil
		}
		lineno++
		// C string functions stop at a NUL byte.
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		line := string(raw)
		if lineno == 1 && strings.HasPrefix(line, "#!") {
			s.Shebang = line
		}

		if s.FirstCommand != 0 {
			// After the first command sbatch reads nothing; report the
			// directives a user may believe still apply, but not those
			// inside a here-document, which the shell feeds to a command.
			if len(heredoc) > 0 {
				if heredoc[0].matches(line) {
					heredoc = heredoc[1:]
				}
				continue
			}
			if looksLikeDirective(line) {
				s.Ignored = append(s.Ignored, Ignored{Line: lineno, Text: line,
					Reason: fmt.Sprintf("it comes after the first command (line %d), and sbatch stops reading #SBATCH directives there", s.FirstCommand)})
				continue
			}
			if !isComment(line) {
				heredoc = append(heredoc, heredocs(line)...)
			}
			continue
		}

		// opt.c, _opt_batch_script: a directive is a line that starts with
		// the magic word "#SBATCH" (xstrncmp: case-sensitive, at column 0);
		// "#SLURM" is still read in 22.05 with a warning.
		var magic string
		switch {
		case strings.HasPrefix(line, "#SBATCH"):
			magic = "#SBATCH"
		case strings.HasPrefix(line, "#SLURM"):
			magic = "#SLURM"
		default:
			// "Stop parsing script if not a comment": the first line whose
			// first non-space character is not '#' is a command.
			if isComment(line) {
				if reason := nearMiss(line); reason != "" {
					s.Ignored = append(s.Ignored, Ignored{Line: lineno, Text: line, Reason: reason})
				}
				continue
			}
			if isBlank(line) {
				continue
			}
			s.FirstCommand = lineno
			heredoc = heredocs(line)
			continue
		}

		// Heterogeneous jobs: a directive line holding "hetjob" (or the
		// older "packjob") starts the next component.
		if containsFold(line, "hetjob") || containsFold(line, "packjob") {
			component++
		}
		d := Directive{Line: lineno, Text: line, Component: component}
		ws, trunc, prob := splitDirective(line[len(magic):])
		if prob != "" {
			s.Problems = append(s.Problems, Problem{Line: lineno, Message: fmt.Sprintf("line %d: %s in [%s]", lineno, prob, line), Fix: fixFor(prob)})
		}
		for _, w := range ws {
			if strings.EqualFold(w.text, "hetjob") || strings.EqualFold(w.text, "packjob") {
				continue
			}
			d.Words = append(d.Words, w.text)
			w.at += len(magic) // from the body's offsets to the line's
			words = append(words, argWord{dirWord: w, line: lineno, component: component, located: true})
		}
		d.Truncated = trunc
		s.Directives = append(s.Directives, d)
	}

	// sbatch runs getopt_long once per component over the words of all its
	// directives together (opt.c, _opt_batch_script then _set_options).
	for c := 0; c <= component; c++ {
		var cw []argWord
		for _, w := range words {
			if w.component == c {
				cw = append(cw, w)
			}
		}
		settings, probs := p.getopt(cw, FromScript)
		for i := range settings {
			settings[i].Component = c
		}
		s.Settings = append(s.Settings, settings...)
		s.Problems = append(s.Problems, probs...)
	}
	return s
}

func fixFor(prob string) string {
	switch {
	case strings.HasPrefix(prob, "Unmatched"):
		return "close the quote, or escape it with a backslash"
	case strings.HasPrefix(prob, "Unexpected"):
		return "remove the space before ':' or quote the value"
	}
	return ""
}

// argWord is one word getopt_long sees.
type argWord struct {
	dirWord
	line      int
	component int
	// located says the word comes from a directive, so that its dirWord
	// offsets say where it is written in its line.
	located bool
}

// span says where w.text[k:] is written in the word's line: the zero Span
// unless those bytes are written as they are, in the word's last run.
func (w argWord) span(k int) Span {
	if !w.located || k < w.tail || k >= len(w.text) {
		return Span{}
	}
	return Span{Start: w.at + k - w.tail, End: w.at + len(w.text) - w.tail}
}

// isspace is C's isspace in the "C" locale.
func isspace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isBlank(line string) bool {
	for i := 0; i < len(line); i++ {
		if !isspace(line[i]) {
			return false
		}
	}
	return true
}

// isComment reports whether the first non-space character is '#'.
func isComment(line string) bool {
	for i := 0; i < len(line); i++ {
		if isspace(line[i]) {
			continue
		}
		return line[i] == '#'
	}
	return false
}

// dirWord is one word of a directive line, unquoted, and where its last
// run of bytes is written: the word's bytes from tail on are the line's
// bytes from at on, unchanged (no quote or escape comes between them).
type dirWord struct {
	text     string
	tail, at int
	// cut says an unescaped '#' ended the word (and the line).
	cut bool
}

// splitDirective splits what follows the magic word into words as
// get_argument in opt.c does: whitespace separates words; single or double
// quotes group (and are removed); a backslash escapes the next character
// (and is removed); an unescaped, unquoted '#' ends the line; a word that
// starts with ':' is fatal; an unmatched quote is fatal. Offsets are body's.
func splitDirective(body string) (words []dirWord, trunc *Truncation, problem string) {
	i := 0
	for {
		for i < len(body) && isspace(body[i]) {
			i++
		}
		if i >= len(body) {
			return words, trunc, ""
		}
		if body[i] == ':' {
			return words, trunc, fmt.Sprintf("Unexpected `:` in [%s]", body[i:])
		}
		start := i
		var w strings.Builder
		dw := dirWord{at: i}
		fresh := true    // the next byte written starts a run
		started := false // the word has consumed a character, quote or escape
		quoted := false
		var q byte
		escape := false
		cut := false
		for i < len(body) && (quoted || !isspace(body[i])) {
			c := body[i]
			switch {
			case escape:
				escape = false
			case c == '\\':
				escape, started, fresh = true, true, true
				i++
				continue
			case quoted:
				if c == q {
					quoted, fresh = false, true
					i++
					continue
				}
			case c == '"' || c == '\'':
				quoted, q, started, fresh = true, c, true, true
				i++
				continue
			case c == '#':
				cut = true
			}
			if cut {
				break
			}
			if fresh {
				dw.tail, dw.at, fresh = w.Len(), i, false
			}
			w.WriteByte(c)
			started = true
			i++
		}
		if quoted {
			return words, trunc, fmt.Sprintf("Unmatched `%c`", q)
		}
		dw.text, dw.cut = w.String(), cut
		if started {
			words = append(words, dw)
		}
		if cut {
			if started && trunc == nil {
				end := i
				for end < len(body) && !isspace(body[end]) {
					end++
				}
				trunc = &Truncation{Read: w.String(), Written: body[start:end]}
			}
			return words, trunc, ""
		}
	}
}

// looksLikeDirective reports whether line is an #SBATCH directive a user
// meant, in any of the forms sbatch does not read: the magic word in any
// case, indented, or with spaces after '#', followed by an option. "##SBATCH"
// (the usual way to switch a directive off) is not one.
func looksLikeDirective(line string) bool {
	t := strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(t, "#") {
		return false
	}
	t = strings.TrimLeft(t[1:], " \t")
	if len(t) < len("sbatch") || !strings.EqualFold(t[:len("sbatch")], "sbatch") {
		return false
	}
	t = t[len("sbatch"):]
	u := strings.TrimLeft(t, " \t")
	return strings.HasPrefix(u, "-") && (len(u) < len(t) || strings.HasPrefix(line, "#SBATCH"))
}

// nearMiss says why a comment line before the first command that looks like
// a directive is not one, or "" when it does not look like one.
func nearMiss(line string) string {
	if !looksLikeDirective(line) {
		return ""
	}
	t := strings.TrimLeft(line, " \t")
	after := strings.TrimLeft(t[1:], " \t")
	word := after[:len("sbatch")]
	switch {
	case len(t) < len(line):
		return "it is indented, and sbatch reads #SBATCH only at the very start of a line"
	case len(after) < len(t)-1:
		return "there is a space between '#' and SBATCH, and sbatch reads only the exact word #SBATCH"
	case word != "SBATCH":
		return fmt.Sprintf("'#%s' is not '#SBATCH': sbatch matches the word case-sensitively", word)
	}
	return ""
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}

// heredocEnd is the delimiter line that ends a here-document.
type heredocEnd struct {
	word     string
	stripTab bool
}

func (h heredocEnd) matches(line string) bool {
	if h.stripTab {
		line = strings.TrimLeft(line, "\t")
	}
	return line == h.word
}

// heredocs finds the here-documents a command line opens ("<<EOF",
// "<<-'EOF'", "<< \"EOF\""), in order. A shell would be exact; this is enough
// to skip #SBATCH lines that a script writes into another script.
func heredocs(line string) []heredocEnd {
	var out []heredocEnd
	for i := 0; i+1 < len(line); i++ {
		if line[i] != '<' || line[i+1] != '<' {
			continue
		}
		j := i + 2
		if j < len(line) && line[j] == '<' { // here-string
			i = j
			continue
		}
		h := heredocEnd{}
		if j < len(line) && line[j] == '-' {
			h.stripTab = true
			j++
		}
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		var w strings.Builder
		for j < len(line) {
			c := line[j]
			if c == '\'' || c == '"' || c == '\\' {
				j++
				continue
			}
			if isspace(c) || c == ';' || c == '|' || c == '&' || c == '<' || c == '>' || c == ')' {
				break
			}
			w.WriteByte(c)
			j++
		}
		if w.Len() > 0 {
			h.word = w.String()
			out = append(out, h)
		}
		i = j - 1
	}
	return out
}
