package misconfig

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mlwarden/mlwarden/internal/literal"
	"github.com/mlwarden/mlwarden/scanners/internal/shdepth"
	"github.com/mlwarden/mlwarden/scanners/slurm"
)

// cmdLine is one command as a list of words (quotes removed), with the line
// it starts on. Variable assignments that prefix the command (or export it)
// are words of the form NAME=VALUE at the front.
type cmdLine struct {
	line  int
	words []string
	note  string // where it came from, when not a file line (image config)
	// scripts are the words as inner scripts (sh -c WORD), with the lines
	// the parser joined kept (only for commands parsed as shell).
	scripts []string
	// wlines are the lines the words start on (0 or missing: line), so
	// that a finding about one word of a continued command is reported
	// where that word is written.
	wlines []int
}

// wordLine is the line word i starts on.
func (cl cmdLine) wordLine(i int) int {
	if i >= 0 && i < len(cl.wlines) && cl.wlines[i] > 0 {
		return cl.wlines[i]
	}
	return cl.line
}

// lastWord is the index of the last word at or after from that match
// accepts, or -1.
func (cl cmdLine) lastWord(from int, match func(string) bool) int {
	for i := len(cl.words) - 1; i >= from && i >= 0; i-- {
		if match(cl.words[i]) {
			return i
		}
	}
	return -1
}

// maxNesting bounds how deep "bash -c '...'" strings are parsed again.
const maxNesting = 3

// shellCommands parses a shell script with a real shell parser
// (mvdan.cc/sh), so continuations, quoting and heredocs are understood. A
// script the parser refuses is read line by line instead: a broken script
// is still checked, and so is one that nests too deeply for the recursive
// parser (shdepth.Check: a stack overflow would kill the process).
func shellCommands(data []byte, depth int) []cmdLine {
	return shellCommandsEnv(data, depth, map[string]string{})
}

// shellCommandsEnv is shellCommands with the values of variables that name
// the node's address (HOST=$(hostname -i)), which later words use.
func shellCommandsEnv(data []byte, depth int, env map[string]string) []cmdLine {
	if _, ok := shdepth.Check(data); !ok {
		return textCommands(data)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(data), "")
	if err != nil {
		return textCommands(data)
	}
	var out []cmdLine
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			out = append(out, heredocCommands(data, n, depth, env)...)
		case *syntax.CallExpr:
			cl := cmdLine{line: int(n.Pos().Line())}
			for _, as := range n.Assigns {
				cl.words = append(cl.words, assignWord(as, env))
				cl.scripts = append(cl.scripts, "")
				cl.wlines = append(cl.wlines, int(as.Pos().Line()))
			}
			for _, w := range n.Args {
				cl.words = append(cl.words, wordString(w, env))
				cl.scripts = append(cl.scripts, scriptString(w, env))
				cl.wlines = append(cl.wlines, int(w.Pos().Line()))
			}
			if len(n.Args) == 0 {
				remember(env, n.Assigns)
			}
			out = append(out, cl)
			out = append(out, nested(cl, depth, env)...)
		case *syntax.DeclClause:
			cl := cmdLine{line: int(n.Pos().Line())}
			for _, as := range n.Args {
				cl.words = append(cl.words, assignWord(as, env))
				cl.wlines = append(cl.wlines, int(as.Pos().Line()))
			}
			remember(env, n.Args)
			out = append(out, cl)
		}
		return true
	})
	return out
}

// heredocCommands are the commands of the here-documents that statement s
// gives a shell to run: the job script of sbatch <<EOF (or cat <<EOF |
// sbatch), and what bash, srun, ssh, su and the like read from their
// standard input. An unquoted body is expanded as the shell expands it
// (slurm.HeredocBody: the node-address variables known, the rest as
// written), and its lines are the file's.
func heredocCommands(data []byte, s *syntax.Stmt, depth int, env map[string]string) []cmdLine {
	if depth >= maxNesting || !hasHeredoc(s) {
		return nil
	}
	var rds []*syntax.Redirect
	if rd := slurm.SubmitsHeredoc(s); rd != nil {
		rds = append(rds, rd)
	} else if c, ok := s.Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 && readsScript(c.Args, env) {
		for _, rd := range s.Redirs {
			if rd.Hdoc != nil && (rd.Op == syntax.Hdoc || rd.Op == syntax.DashHdoc) {
				rds = append(rds, rd)
			}
		}
	}
	var out []cmdLine
	for _, rd := range rds {
		body, ok := slurm.HeredocBody(data, rd, func(p *syntax.ParamExp) (string, bool) {
			if p.Param == nil || p.Exp != nil || env[p.Param.Value] == "" {
				return "", false
			}
			return env[p.Param.Value], true
		})
		if !ok {
			continue
		}
		first := int(rd.Hdoc.Pos().Line())
		for _, in := range shellCommandsEnv([]byte(body), depth+1, env) {
			in.line = first + in.line - 1
			for k, l := range in.wlines {
				if l > 0 {
					in.wlines[k] = first + l - 1
				}
			}
			out = append(out, in)
		}
	}
	return out
}

// hasHeredoc reports a statement with a here-document (on it, or on the
// first command of its pipe: cat <<EOF | sbatch).
func hasHeredoc(s *syntax.Stmt) bool {
	for {
		for _, rd := range s.Redirs {
			if rd.Hdoc != nil {
				return true
			}
		}
		bc, ok := s.Cmd.(*syntax.BinaryCmd)
		if !ok || bc.Op != syntax.Pipe {
			return false
		}
		s = bc.X
	}
}

// readsScript reports a command that runs its standard input as shell
// commands: a shell, or srun, salloc, ssh, su, runuser, a container's
// exec or run, in front of one or of a login shell.
func readsScript(args []*syntax.Word, env map[string]string) bool {
	for i, w := range args {
		p := prog(wordString(w, env))
		switch p {
		case "sh", "bash", "zsh", "dash", "ksh", "ash":
			return true
		case "ssh", "su", "runuser":
			return i == 0 || prog(wordString(args[0], env)) == "sudo"
		case "python", "python3", "perl", "ruby", "node", "cat", "tee":
			return false
		}
	}
	return false
}

// remember keeps the assignments whose value is the node's address.
func remember(env map[string]string, assigns []*syntax.Assign) {
	for _, as := range assigns {
		if as.Name == nil {
			continue
		}
		v := ""
		if as.Value != nil {
			v = wordString(as.Value, env)
		}
		if nodeAddress(v) {
			env[as.Name.Value] = v
		} else {
			delete(env, as.Name.Value)
		}
	}
}

// nested parses words that are themselves scripts ("bash -c '…'",
// "srun --wrap='…'") as shell, each inner line at its line in the file.
func nested(cl cmdLine, depth int, env map[string]string) []cmdLine {
	if depth >= maxNesting {
		return nil
	}
	var out []cmdLine
	for i, w := range cl.words {
		first := cl.wordLine(i)
		if i < len(cl.scripts) && cl.scripts[i] != "" {
			w = cl.scripts[i]
		}
		if _, v, ok := strings.Cut(w, "--wrap="); ok && strings.HasPrefix(w, "--wrap=") {
			w = v
		}
		if !strings.ContainsAny(w, " \t\n") {
			continue
		}
		for _, in := range shellCommandsEnv([]byte(w), depth+1, env) {
			in.line = first + in.line - 1
			for k, l := range in.wlines {
				if l > 0 {
					in.wlines[k] = first + l - 1
				}
			}
			in.scripts = nil
			out = append(out, in)
		}
	}
	return out
}

func assignWord(as *syntax.Assign, env map[string]string) string {
	if as.Name == nil {
		return ""
	}
	v := ""
	if as.Value != nil {
		v = wordString(as.Value, env)
	}
	return as.Name.Value + "=" + v
}

// wordString renders a shell word with quotes removed. Expansions are kept as
// written ("${TOKEN}"), so a value that comes from a variable never looks
// empty; a variable that holds the node's address (env) is replaced by it,
// and a short command substitution is kept as written ("$(hostname -i)").
func wordString(w *syntax.Word, env map[string]string) string {
	var b strings.Builder
	writeParts(&b, w.Parts, env, nil)
	return b.String()
}

// scriptString is wordString for a word that is itself a script: the
// backslash-newlines the parser dropped come back, so that the inner
// script's lines are the file's.
func scriptString(w *syntax.Word, env map[string]string) string {
	if w.Pos().Line() == w.End().Line() {
		return ""
	}
	var b strings.Builder
	var last uint
	writeParts(&b, w.Parts, env, &last)
	return b.String()
}

func writeParts(b *strings.Builder, parts []syntax.WordPart, env map[string]string, last *uint) {
	for _, p := range parts {
		if last != nil {
			if l := p.Pos().Line(); *last > 0 && l > *last {
				b.WriteString(strings.Repeat("\\\n", int(l-*last)))
			}
			*last = p.End().Line()
		}
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if last != nil {
				*last = p.Pos().Line()
			}
			writeParts(b, p.Parts, env, last)
			if last != nil {
				*last = p.End().Line()
			}
		case *syntax.ParamExp:
			if p.Param != nil && p.Exp == nil && env[p.Param.Value] != "" {
				b.WriteString(env[p.Param.Value])
				continue
			}
			b.WriteString("${")
			if p.Param != nil {
				b.WriteString(p.Param.Value)
			}
			b.WriteString("}")
		case *syntax.CmdSubst:
			b.WriteString(cmdSubstString(p))
			if last != nil {
				b.WriteString(strings.Repeat("\n", int(p.End().Line()-p.Pos().Line())))
			}
		default:
			b.WriteString("…")
		}
	}
}

// cmdSubstString renders a one-line command substitution as written
// ("$(hostname -i)") and any other as "$(…)".
func cmdSubstString(c *syntax.CmdSubst) string {
	if len(c.Stmts) != 1 || c.Pos().Line() != c.End().Line() {
		return "$(…)"
	}
	var b bytes.Buffer
	if err := syntax.NewPrinter(syntax.SingleLine(true)).Print(&b, c.Stmts[0]); err != nil || b.Len() > 200 {
		return "$(…)"
	}
	return "$(" + strings.TrimSpace(b.String()) + ")"
}

// textCommands splits any text into logical lines (a trailing backslash
// continues a line) and each line into words, treating quotes, commas,
// brackets and parentheses as separators. It reads command lines written in
// YAML lists, Python argument lists and config files well enough.
//
// Only lines a detector may read are split (every consumer drops the
// others: interesting): without a quote, a line's words are pieces of it,
// so a line that holds none of lineWords (ASCII case folded) has no word
// interesting accepts. Splitting every line of every Python file with a
// command word somewhere ("ray" in "array") was 1.9 s of a scan of Debian's
// Python packages. Text with letters whose lower case is ASCII is split
// whole. TestTextCommandsGate compares with splitting every line.
func textCommands(data []byte) []cmdLine {
	var out []cmdLine
	gate := lineWords()
	if foldsToASCII(data) {
		gate = nil
	}
	var joined []byte
	var breaks []int // where each continuation line starts in joined
	for n, rest, more := 0, data, true; more; {
		var l []byte
		l, rest, more = bytes.Cut(rest, []byte{'\n'})
		n++
		start := n
		breaks = breaks[:0]
		for more && bytes.HasSuffix(bytes.TrimRight(l, " \t\r"), []byte{'\\'}) {
			var next []byte
			next, rest, more = bytes.Cut(rest, []byte{'\n'})
			n++
			head := bytes.TrimSuffix(bytes.TrimRight(l, " \t\r"), []byte{'\\'})
			joined = append(append(append(joined[:0:0], head...), ' '), next...)
			breaks = append(breaks, len(joined)-len(next))
			l = joined
		}
		if len(l) > 64<<10 {
			l = l[:64<<10] // minified data, not a command
		}
		if gate != nil && !bytes.ContainsAny(l, `"'`) && gate.NextBytes(l, 0) < 0 {
			continue // no word interesting accepts
		}
		cl := cmdLine{line: start}
		if len(breaks) == 0 {
			cl.words = splitWords(string(l), nil)
		} else {
			// A continued line: keep, for each word, the line it is on.
			var at []int
			cl.words = splitWords(string(l), &at)
			cl.wlines = make([]int, len(at))
			for i, off := range at {
				cl.wlines[i] = start + sort.SearchInts(breaks, off+1)
			}
		}
		if len(cl.words) > 0 {
			out = append(out, cl)
		}
	}
	return out
}

// lineWords finds, in a line without quotes, what one of its words must
// hold for interesting to accept it: "-m", "--donate-level", a program's
// name, a service variable's name or JUPYTER_TOKEN.
var lineWords = sync.OnceValue(func() *literal.Finder {
	words := []string{"-m", "--donate-level", "jupyter_token"}
	for p := range programs {
		words = append(words, p)
	}
	for k := range serviceEnv {
		words = append(words, strings.ToLower(k))
	}
	return literal.New(words)
})

// splitWords tokenizes one line. A quoted string is one word without its
// quotes; an empty quoted string after "=" yields an empty value.
//
// With starts, the offset in l where each word begins is appended to it.
func splitWords(l string, starts *[]int) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if starts != nil && !inWord && !isSeparator(c) {
			*starts = append(*starts, i)
		}
		switch c {
		case '"', '\'':
			j := strings.IndexByte(l[i+1:], c)
			if j < 0 {
				cur.WriteString(l[i+1:])
				inWord = true
				i = len(l)
				continue
			}
			cur.WriteString(l[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ' ', '\t', '\r', ',', '[', ']', '(', ')', '{', '}', ';', '|', '&', '`':
			flush()
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words
}

// isSeparator reports whether splitWords ends a word at c.
func isSeparator(c byte) bool {
	switch c {
	case ' ', '\t', '\r', ',', '[', ']', '(', ')', '{', '}', ';', '|', '&', '`':
		return true
	}
	return false
}

// imageConfig is the part of an OCI/Docker image config the check reads.
type imageConfig struct {
	Config struct {
		Env        []string `json:"Env"`
		Cmd        []string `json:"Cmd"`
		Entrypoint []string `json:"Entrypoint"`
	} `json:"config"`
	History []struct {
		CreatedBy string `json:"created_by"`
	} `json:"history"`
}

func imageCommands(data []byte) []cmdLine {
	var cfg imageConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil
	}
	var out []cmdLine
	start := cmdLine{note: "image command (Entrypoint and Cmd)"}
	start.words = append(start.words, cfg.Config.Env...)
	start.words = append(start.words, cfg.Config.Entrypoint...)
	start.words = append(start.words, cfg.Config.Cmd...)
	out = append(out, start)
	out = append(out, nested(start, 0, map[string]string{})...)
	for i, h := range cfg.History {
		cb := strings.TrimSpace(h.CreatedBy)
		cb = strings.TrimPrefix(cb, "/bin/sh -c ")
		if strings.HasPrefix(cb, "#(nop)") {
			continue // metadata instructions (ENV, LABEL, CMD) are in the config itself
		}
		for _, cl := range shellCommands([]byte(cb), 1) {
			cl.note = "image history entry " + itoa(i)
			out = append(out, cl)
		}
	}
	return out
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
