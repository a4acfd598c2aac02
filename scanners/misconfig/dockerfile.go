//go:build !mlwarden_sbatch

package misconfig

import (
	"bytes"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/mlwarden/mlwarden/scanners/internal/instr"
)

// dockerfileCommands reads RUN, CMD and ENTRYPOINT instructions with
// BuildKit's own Dockerfile parser; shell forms are parsed as shell.
func dockerfileCommands(data []byte) []cmdLine {
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return textCommands(data)
	}
	lines := strings.Split(string(data), "\n")
	var out []cmdLine
	for _, n := range res.AST.Children {
		switch strings.ToLower(n.Value) {
		case "run", "cmd", "entrypoint":
		default:
			continue
		}
		if n.Attributes["json"] {
			cl := cmdLine{line: n.StartLine}
			for a := n.Next; a != nil; a = a.Next {
				cl.words = append(cl.words, a.Value)
			}
			out = append(out, cl)
			out = append(out, nested(cl, 0, map[string]string{})...)
			continue
		}
		if len(n.Heredocs) == 0 {
			if cls, ok := shellForm(n, lines); ok {
				out = append(out, cls...)
				continue
			}
		}
		var body strings.Builder
		for a := n.Next; a != nil; a = a.Next {
			body.WriteString(a.Value)
			body.WriteByte(' ')
		}
		for _, cl := range shellCommands([]byte(body.String()), 1) {
			cl.line, cl.wlines = n.StartLine, nil
			out = append(out, cl)
		}
		// The bodies follow the instruction's line(s), each ended by its
		// delimiter's line: BuildKit runs or writes them, so they are read
		// as commands, at their own lines.
		first := n.EndLine + 1
		for _, h := range n.Heredocs {
			first -= strings.Count(h.Content, "\n") + 1
		}
		for _, h := range n.Heredocs {
			for _, cl := range shellCommands([]byte(h.Content), 1) {
				cl.line = first + cl.line - 1
				for k, l := range cl.wlines {
					if l > 0 {
						cl.wlines[k] = first + l - 1
					}
				}
				if cl.line < n.StartLine || cl.line > n.EndLine {
					cl.line, cl.wlines = n.StartLine, nil
				}
				out = append(out, cl)
			}
			first += strings.Count(h.Content, "\n") + 1
		}
	}
	return out
}

// shellForm parses a shell-form instruction from its source lines (the
// instruction word and its flags dropped, and the comment and blank lines
// BuildKit removes inside continuations), so that each command and word
// keeps the line it is written on.
func shellForm(n *parser.Node, lines []string) ([]cmdLine, bool) {
	text, lineOf, ok := instr.Shell(lines, n.StartLine, n.EndLine, false)
	if !ok {
		return nil, false
	}
	at := func(l int) int { return instr.Line(lineOf, l) }
	cls := shellCommands([]byte(text), 1)
	for i := range cls {
		cls[i].line = at(cls[i].line)
		for k, l := range cls[i].wlines {
			if l > 0 {
				cls[i].wlines[k] = at(l)
			}
		}
	}
	return cls, true
}
