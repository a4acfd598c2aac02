package misconfig

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"mvdan.cc/sh/v3/syntax"

	"github.com/mlwarden/mlwarden/scanners/internal/shdepth"
)

// cmdLine is one command as a list of words (quotes removed), with the line
// it starts on. Variable assignments that prefix the command (or export it)
// are words of the form NAME=VALUE at the front.
type cmdLine struct {
	line  int
	words []string
	note  string // where it came from, when not a file line (image config)
}

// maxNesting bounds how deep "bash -c '...'" strings are parsed again.
const maxNesting = 3

// shellCommands parses a shell script with a real shell parser
// (mvdan.cc/sh), so continuations, quoting and heredocs are understood. A
// script the parser refuses is read line by line instead: a broken script
// is still checked, and so is one that nests too deeply for the recursive
// parser (shdepth.Check: a stack overflow would kill the process).
func shellCommands(data []byte, depth int) []cmdLine {
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
		case *syntax.CallExpr:
			cl := cmdLine{line: int(n.Pos().Line())}
			for _, as := range n.Assigns {
				cl.words = append(cl.words, assignWord(as))
			}
			for _, w := range n.Args {
				cl.words = append(cl.words, wordString(w))
			}
			out = append(out, cl)
			out = append(out, nested(cl, depth)...)
		case *syntax.DeclClause:
			cl := cmdLine{line: int(n.Pos().Line())}
			for _, as := range n.Args {
				cl.words = append(cl.words, assignWord(as))
			}
			out = append(out, cl)
		}
		return true
	})
	return out
}

// nested parses words that are themselves scripts ("bash -c '…'",
// "srun --wrap='…'") as shell, at the line of the outer command.
func nested(cl cmdLine, depth int) []cmdLine {
	if depth >= maxNesting {
		return nil
	}
	var out []cmdLine
	for _, w := range cl.words {
		if _, v, ok := strings.Cut(w, "--wrap="); ok && strings.HasPrefix(w, "--wrap=") {
			w = v
		}
		if !strings.ContainsAny(w, " \t\n") {
			continue
		}
		for _, in := range shellCommands([]byte(w), depth+1) {
			in.line = cl.line
			out = append(out, in)
		}
	}
	return out
}

func assignWord(as *syntax.Assign) string {
	if as.Name == nil {
		return ""
	}
	v := ""
	if as.Value != nil {
		v = wordString(as.Value)
	}
	return as.Name.Value + "=" + v
}

// wordString renders a shell word with quotes removed. Expansions are kept as
// written ("${TOKEN}"), so a value that comes from a variable never looks
// empty.
func wordString(w *syntax.Word) string {
	var b strings.Builder
	writeParts(&b, w.Parts)
	return b.String()
}

func writeParts(b *strings.Builder, parts []syntax.WordPart) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			writeParts(b, p.Parts)
		case *syntax.ParamExp:
			b.WriteString("${")
			if p.Param != nil {
				b.WriteString(p.Param.Value)
			}
			b.WriteString("}")
		case *syntax.CmdSubst:
			b.WriteString("$(…)")
		default:
			b.WriteString("…")
		}
	}
}

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
			out = append(out, nested(cl, 0)...)
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

// textCommands splits any text into logical lines (a trailing backslash
// continues a line) and each line into words, treating quotes, commas,
// brackets and parentheses as separators. It reads command lines written in
// YAML lists, Python argument lists and config files well enough.
func textCommands(data []byte) []cmdLine {
	var out []cmdLine
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		start := i
		l := lines[i]
		for strings.HasSuffix(strings.TrimRight(l, " \t\r"), "\\") && i+1 < len(lines) {
			l = strings.TrimSuffix(strings.TrimRight(l, " \t\r"), "\\") + " " + lines[i+1]
			i++
		}
		if len(l) > 64<<10 {
			l = l[:64<<10] // minified data, not a command
		}
		words := splitWords(l)
		if len(words) > 0 {
			out = append(out, cmdLine{line: start + 1, words: words})
		}
	}
	return out
}

// splitWords tokenizes one line. A quoted string is one word without its
// quotes; an empty quoted string after "=" yields an empty value.
func splitWords(l string) []string {
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
	out = append(out, nested(start, 0)...)
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
