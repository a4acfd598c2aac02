package slurm

import (
	"bytes"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mlwarden/mlwarden/scanners/internal/shdepth"
)

// A Job is a batch script that a shell script submits without a file of
// its own: the here-document of "sbatch <<EOF" (or "cat <<EOF | sbatch"),
// as sbatch reads it on its standard input.
type Job struct {
	// Line is the line of the enclosing script that the job's first line
	// is on.
	Line int
	// Script is the job script, line for line: with the shell's
	// expansions of an unquoted delimiter applied where they are known.
	Script []byte
}

// Jobs finds the batch scripts that script submits through a
// here-document to sbatch. Variables set by plain literal assignments
// before the submission are expanded in an unquoted here-document, as the
// submitting shell expands them; anything else is kept as written. A
// script the shell parser refuses has none.
func Jobs(script []byte) []Job {
	if !bytes.Contains(script, []byte("sbatch")) || !bytes.Contains(script, []byte("<<")) {
		return nil
	}
	if _, ok := shdepth.Check(script); !ok {
		return nil
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(script), "")
	if err != nil {
		return nil
	}
	env := map[string]string{}
	lookup := func(p *syntax.ParamExp) (string, bool) {
		if !simpleParam(p) {
			return "", false
		}
		v, ok := env[p.Param.Value]
		return v, ok
	}
	var out []Job
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				for _, as := range n.Assigns {
					literalAssign(env, as)
				}
			}
		case *syntax.DeclClause:
			for _, as := range n.Args {
				literalAssign(env, as)
			}
		case *syntax.Stmt:
			if rd := SubmitsHeredoc(n); rd != nil {
				if body, ok := HeredocBody(script, rd, lookup); ok {
					out = append(out, Job{Line: int(rd.Hdoc.Pos().Line()), Script: []byte(body)})
				}
			}
		}
		return true
	})
	return out
}

// simpleParam reports a plain $NAME or ${NAME}.
func simpleParam(p *syntax.ParamExp) bool {
	return p.Param != nil && !p.Excl && !p.Length && !p.Width && p.Index == nil && p.Slice == nil && p.Repl == nil && p.Exp == nil && p.NestedParam == nil
}

// literalAssign keeps NAME=literal in env and forgets any other value.
func literalAssign(env map[string]string, as *syntax.Assign) {
	if as.Name == nil || as.Naked && as.Value == nil {
		return
	}
	name := as.Name.Value
	if as.Value == nil && !as.Append {
		env[name] = ""
		return
	}
	if as.Array != nil || as.Index != nil || as.Value == nil {
		delete(env, name)
		return
	}
	v, ok := literalWord(as.Value)
	switch {
	case !ok:
		delete(env, name)
	case as.Append:
		if old, set := env[name]; set {
			env[name] = old + v
		} else {
			delete(env, name)
		}
	default:
		env[name] = v
	}
}

// literalWord is the value of a word without expansions.
func literalWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.Contains(p.Value, `\`) {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.Contains(l.Value, `\`) {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// SubmitsHeredoc returns the here-document that statement s gives sbatch
// as its batch script: "sbatch [options] <<EOF" with no script operand,
// or "cat <<EOF | sbatch [options]". It returns nil for anything else.
func SubmitsHeredoc(s *syntax.Stmt) *syntax.Redirect {
	if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && bc.Op == syntax.Pipe {
		// cat <<EOF | sbatch
		rd := heredocOf(bc.X)
		if rd == nil {
			return nil
		}
		if c, ok := bc.Y.Cmd.(*syntax.CallExpr); !ok || !sbatchReadsStdin(c.Args) {
			return nil
		}
		if c, ok := bc.X.Cmd.(*syntax.CallExpr); !ok || len(c.Args) != 1 || litWord(c.Args[0]) != "cat" {
			return nil
		}
		return rd
	}
	rd := heredocOf(s)
	if rd == nil {
		return nil
	}
	if c, ok := s.Cmd.(*syntax.CallExpr); !ok || !sbatchReadsStdin(c.Args) {
		return nil
	}
	return rd
}

func heredocOf(s *syntax.Stmt) *syntax.Redirect {
	var hd *syntax.Redirect
	for _, rd := range s.Redirs {
		if rd.Hdoc == nil || rd.Op != syntax.Hdoc && rd.Op != syntax.DashHdoc {
			continue
		}
		if rd.N != nil && rd.N.Value != "0" {
			continue
		}
		hd = rd // the last one is standard input
	}
	return hd
}

// litWord is a word that is one literal, or "".
func litWord(w *syntax.Word) string {
	if len(w.Parts) != 1 {
		return ""
	}
	if l, ok := w.Parts[0].(*syntax.Lit); ok {
		return l.Value
	}
	return ""
}

// sbatchReadsStdin reports an sbatch command (behind sudo, env, command,
// exec, time, nohup) that names no batch script, so it reads one from
// its standard input. The option table says which options take a value.
func sbatchReadsStdin(args []*syntax.Word) bool {
	for len(args) > 0 {
		switch path.Base(litWord(args[0])) {
		case "sudo", "command", "exec", "time", "nohup", "builtin":
			args = args[1:]
			for len(args) > 0 && strings.HasPrefix(litWord(args[0]), "-") {
				args = args[1:]
			}
			continue
		case "env":
			args = args[1:]
			for len(args) > 0 && (strings.HasPrefix(litWord(args[0]), "-") || strings.Contains(litWord(args[0]), "=")) {
				args = args[1:]
			}
			continue
		case "sbatch":
		default:
			return false
		}
		break
	}
	if len(args) == 0 {
		return false
	}
	table := defaultTable()
	for rest := args[1:]; len(rest) > 0; rest = rest[1:] {
		w := litWord(rest[0])
		if w == "" {
			if len(rest[0].Parts) == 0 {
				continue
			}
			return false // a script named by an expansion, or an option we cannot read
		}
		switch {
		case w == "--":
			return len(rest) == 1
		case w == "-":
			return true
		case !strings.HasPrefix(w, "-"):
			return false // the batch script
		case strings.HasPrefix(w, "--wrap"):
			return false // the script is the option's value
		}
		if table.takesSeparateValue(w) {
			rest = rest[1:]
			if len(rest) == 0 {
				return true
			}
		}
	}
	return true
}

// HeredocBody is the text a command reads from here-document rd of src.
// With a quoted delimiter ('EOF', "EOF", \EOF) it is the body as
// written. Otherwise the shell expands it: each parameter expansion that
// lookup knows is replaced by its value (when the value holds no newline),
// the backslash before $, ` and \ goes, and everything else is kept as
// written ($(…) and unknown variables too), so that line n of the text is
// line n of the body. It reports false when rd is not a here-document.
func HeredocBody(src []byte, rd *syntax.Redirect, lookup func(*syntax.ParamExp) (string, bool)) (string, bool) {
	body, ok := heredocBody(src, rd, lookup)
	if ok && rd.Op == syntax.DashHdoc {
		// <<- strips the leading tabs of every line, the delimiter's too.
		lines := strings.Split(body, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimLeft(l, "\t")
		}
		body = strings.Join(lines, "\n")
	}
	return body, ok
}

func heredocBody(src []byte, rd *syntax.Redirect, lookup func(*syntax.ParamExp) (string, bool)) (string, bool) {
	if rd == nil || rd.Hdoc == nil {
		return "", false
	}
	start, end := int(rd.Hdoc.Pos().Offset()), int(rd.Hdoc.End().Offset())
	if end > len(src) || start >= end {
		return "", false
	}
	if rd.Word == nil || quotedDelim(rd.Word) {
		if len(rd.Hdoc.Parts) == 1 {
			if l, ok := rd.Hdoc.Parts[0].(*syntax.Lit); ok {
				return l.Value, true // without the delimiter line
			}
		}
		return string(src[start:end]), true
	}
	var b strings.Builder
	last := rd.Hdoc.Pos().Line()
	for _, p := range rd.Hdoc.Parts {
		if l := p.Pos().Line(); l > last {
			// The shell dropped a backslash-newline here: the job's
			// shell reads the line break the same way.
			b.WriteString(strings.Repeat("\\\n", int(l-last)))
		}
		last = p.End().Line()
		from, to := int(p.Pos().Offset()), int(p.End().Offset())
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeHeredoc(p.Value))
			if strings.HasSuffix(p.Value, "\n") {
				last = p.Pos().Line() + uint(strings.Count(p.Value, "\n"))
			}
			continue
		case *syntax.ParamExp:
			if lookup != nil {
				if v, ok := lookup(p); ok && !strings.Contains(v, "\n") {
					b.WriteString(v)
					continue
				}
			}
		}
		if to <= len(src) && from < to {
			b.Write(src[from:to])
		}
	}
	return b.String(), true
}

// quotedDelim reports a here-document delimiter with quoting in it, whose
// body the shell does not expand.
func quotedDelim(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.Contains(p.Value, `\`) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// unescapeHeredoc removes the backslashes an unquoted here-document's
// body drops: before $, ` and \.
func unescapeHeredoc(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\\", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
