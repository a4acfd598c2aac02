//go:build !mlwarden_sbatch

package misconfig

import (
	"bytes"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// dockerfileCommands reads RUN, CMD and ENTRYPOINT instructions with
// BuildKit's own Dockerfile parser; shell forms are parsed as shell.
func dockerfileCommands(data []byte) []cmdLine {
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return textCommands(data)
	}
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
		var body strings.Builder
		for a := n.Next; a != nil; a = a.Next {
			body.WriteString(a.Value)
			body.WriteByte(' ')
		}
		for _, cl := range shellCommands([]byte(body.String()), 1) {
			cl.line = n.StartLine
			out = append(out, cl)
		}
		for _, h := range n.Heredocs {
			for _, cl := range shellCommands([]byte(h.Content), 1) {
				cl.line = n.StartLine
				out = append(out, cl)
			}
		}
	}
	return out
}
