//go:build !mlwarden_sbatch

package pins

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/mlwarden/mlwarden/scanners/internal/instr"
)

// scanDockerfile checks FROM, COPY --from, ADD and RUN instructions.
func scanDockerfile(data []byte, r *rep) {
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		r.add(ruleUnparsed, 0, "", fmt.Sprintf("Dockerfile could not be parsed (%v), so its images and RUN commands were not checked for pins; fix the syntax", err))
		return
	}
	lines := strings.Split(string(data), "\n")
	global := map[string]string{}
	env := global
	stages := map[string]bool{}
	st := newShellState()
	st.env = env
	seenFrom := false
	workdir := ""
	for _, n := range res.AST.Children {
		args := nodeArgs(n)
		switch strings.ToLower(n.Value) {
		case "arg":
			for _, a := range args {
				name, def, hasDef := strings.Cut(a, "=")
				if hasDef {
					v, dyn := expandVars(def, env)
					if dyn {
						delete(env, name)
					} else {
						env[name] = v
					}
				} else if !seenFrom {
					delete(env, name) // set by --build-arg, if at all
				} else if v, ok := global[name]; ok {
					env[name] = v // a global ARG redeclared in the stage
				}
			}
		case "workdir":
			// Each RUN starts in the WORKDIR (relative ones add up).
			if len(args) > 0 {
				if w, dyn := expandVars(args[0], env); !dyn {
					workdir = path.Join(workdir, w)
				} else {
					workdir = "\x00workdir"
				}
			}
		case "env":
			for i := 0; i+1 < len(args); i += 2 {
				if args[i] == "PATH" {
					(&shellScan{st: st}).pathSet(args[i+1])
				}
				v, dyn := expandVars(args[i+1], env)
				envExtraIndex(r, args[i], v, n.StartLine)
				if dyn {
					delete(env, args[i])
				} else {
					env[args[i]] = v
				}
			}
		case "from":
			if len(args) == 0 {
				continue
			}
			if !seenFrom {
				// Stages see global ARGs only when they redeclare them.
				global = maps(env)
				seenFrom = true
			}
			img, dyn := expandVars(args[0], global)
			switch {
			case stages[strings.ToLower(img)], strings.EqualFold(img, "scratch"):
			default:
				r.image(n.StartLine, "FROM", img, dyn)
			}
			if len(args) >= 3 && strings.EqualFold(args[1], "as") {
				stages[strings.ToLower(args[2])] = true
			}
			env = map[string]string{} // ARGs must be redeclared inside a stage
			st.env = env
			workdir = ""
		case "copy":
			for _, f := range n.Flags {
				from, ok := strings.CutPrefix(f, "--from=")
				if !ok {
					continue
				}
				img, dyn := expandVars(from, env)
				if _, err := strconv.Atoi(img); err == nil || stages[strings.ToLower(img)] {
					continue
				}
				r.image(n.StartLine, "COPY --from", img, dyn)
			}
		case "add":
			dockerAdd(n, args, env, r)
		case "run":
			st.cwd = workdir
			if res.EscapeToken == '\\' {
				dockerRun(n, args, lines, st, r) // not a Windows (escape=`) Dockerfile
			}
		}
	}
	st.finish()
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// nodeArgs returns an instruction's arguments.
func nodeArgs(n *parser.Node) []string {
	var out []string
	for a := n.Next; a != nil; a = a.Next {
		out = append(out, a.Value)
	}
	return out
}

// dockerAdd checks ADD of remote files (needs --checksum) and git
// repositories (needs a commit).
func dockerAdd(n *parser.Node, args []string, env map[string]string, r *rep) {
	checksum := false
	for _, f := range n.Flags {
		if strings.HasPrefix(f, "--checksum=") {
			checksum = true
		}
	}
	if len(args) < 2 || checksum {
		return
	}
	for _, src := range args[:len(args)-1] {
		u, _ := expandVars(src, env)
		isGit := strings.HasPrefix(u, "git@") || strings.Contains(u, ".git#") || strings.HasSuffix(u, ".git") || strings.HasPrefix(u, "git://")
		switch {
		case isGit:
			_, ref, _ := strings.Cut(u, "#")
			ref, _, _ = strings.Cut(ref, ":")
			if !isCommit(ref) {
				r.add(ruleGitCloneUnpinned, n.StartLine, u, fmt.Sprintf("ADD %s fetches a git repository at a branch or tag that can move; pin the commit: ADD %s#<40-hex commit> (or --checksum=<commit>)", u, strings.SplitN(u, "#", 2)[0]))
			}
		case strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://"):
			r.add(ruleDownloadNoChecksum, n.StartLine, u, fmt.Sprintf("ADD %s downloads a file into the image with no checksum, so whatever the server returns is built in; pin it: ADD --checksum=sha256:<hash> %s …", u, u))
		}
	}
}

// dockerRun checks a RUN instruction's commands as shell, at their own lines.
func dockerRun(n *parser.Node, args []string, lines []string, st *shellState, r *rep) {
	if n.Attributes["json"] {
		// Exec form: ["pip", "install", "x"] or ["sh", "-c", "..."].
		sc := &shellScan{st: st, r: r, dockerfile: true}
		argv := make([]arg, len(args))
		for i, a := range args {
			v, dyn := expandVars(a, st.env)
			argv[i] = arg{s: v, dyn: dyn}
		}
		if len(argv) >= 3 && isShell(prog(argv[0])) && argv[1].s == "-c" {
			sc.nested(args[2], n.StartLine, "")
			return
		}
		if len(argv) > 0 {
			sc.command(argv, n.StartLine)
		}
		return
	}
	// The shell text from the source lines, each part at its own line
	// (comment and blank lines kept inside heredoc bodies).
	text, lineOf, ok := instr.Shell(lines, n.StartLine, n.EndLine, len(n.Heredocs) > 0)
	if !ok {
		return
	}
	sc := &shellScan{st: st, src: []byte(text), dockerfile: true, r: r.subMap(func(l int) int { return instr.Line(lineOf, l) })}
	sc.run()
}
