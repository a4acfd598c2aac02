package pins

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file holds the commands that run other commands: xargs, ssh, su,
// containers (docker/podman run, apptainer exec), and what a shell reads
// from a heredoc; and the --trust-remote-code flag of model servers.

// xargsValueOpts are xargs options that take the next word as value.
var xargsValueOpts = map[string]bool{
	"-a": true, "--arg-file": true, "-d": true, "--delimiter": true, "-E": true, "-e": true, "--eof": true,
	"-I": true, "-i": true, "--replace": true, "-L": true, "-l": true, "--max-lines": true, "-n": true,
	"--max-args": true, "-P": true, "--max-procs": true, "-s": true, "--max-chars": true,
	"--process-slot-var": true,
}

// skipXargs drops xargs' options and returns the command it runs.
func skipXargs(args []arg) []arg {
	for len(args) > 0 && strings.HasPrefix(args[0].s, "-") {
		o := args[0].s
		args = args[1:]
		if o == "--" {
			break
		}
		if xargsValueOpts[o] && len(args) > 0 {
			args = args[1:]
		}
	}
	return args
}

// sshValueOpts are ssh's short options that take a value.
const sshValueOpts = "BbcDEeFIiJLlmOoPpQRSWw"

// sshCommand returns the remote command words of an ssh call (after the
// options and the host), and whether there was a host.
func sshCommand(args []arg) ([]arg, bool) {
	for len(args) > 0 && strings.HasPrefix(args[0].s, "-") && len(args[0].s) > 1 {
		o := args[0].s
		args = args[1:]
		if o == "--" {
			break
		}
		if strings.IndexByte(sshValueOpts, o[len(o)-1]) >= 0 && len(args) > 0 {
			args = args[1:]
		}
	}
	if len(args) == 0 {
		return nil, false
	}
	return args[1:], true
}

// ssh checks the command run on the remote host: the remote shell joins the
// words with spaces and runs them as a script.
func (sc *shellScan) ssh(args []arg, ln int) {
	if cmd, ok := sshCommand(args); ok && len(cmd) > 0 {
		sc.inlineScript(cmd, ln)
	}
}

// su checks su/runuser -c 'commands' [user] and runuser -u user -- cmd.
func (sc *shellScan) su(args []arg, ln int) {
	for i := 0; i < len(args); i++ {
		a := args[i].s
		switch {
		case a == "-c" || a == "--command" || a == "--session-command":
			if i+1 < len(args) {
				sc.inlineScript(args[i+1:i+2], ln)
			}
			return
		case strings.HasPrefix(a, "--command="):
			// The value is a part of the word: judge it as written.
			sc.nested(strings.TrimPrefix(args[i].s, "--command="), argLine(args[i], ln), "")
			return
		case a == "-u" || a == "--user":
			// runuser -u USER [--] COMMAND...
			rest := args[i+1:]
			if len(rest) > 0 {
				rest = rest[1:]
			}
			if len(rest) > 0 && rest[0].s == "--" {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				sc.command(rest, ln)
			}
			return
		}
	}
}

// readsStdinScript reports whether a command runs its standard input as
// shell commands (bash, sh -s, ssh host, srun bash, su - user) and, when
// it runs Python, that it does.
func readsStdinScript(sc *shellScan, args []arg, depth int) (shell, python bool) {
	args = unwrap(args)
	if len(args) == 0 || depth > 4 {
		return false, false
	}
	p := prog(args[0])
	switch {
	case isShell(p):
		return len(skipOpts(args[1:])) == 0, false
	case isPython(p):
		rest := skipOpts(args[1:])
		return false, len(rest) == 0 || rest[0].s == "-"
	case p == "ssh":
		cmd, ok := sshCommand(args[1:])
		if !ok {
			return false, false
		}
		if len(cmd) == 0 {
			return true, false // the remote login shell reads it
		}
		return readsStdinScript(sc, cmd, depth+1)
	case p == "su" || p == "runuser":
		for _, a := range args[1:] {
			if a.s == "-c" || a.s == "--command" || a.s == "-u" {
				return false, false
			}
		}
		return true, false
	case p == "srun":
		if rest := slurmCommand(args); len(rest) > 0 {
			return readsStdinScript(sc, rest, depth+1)
		}
	case p == "xargs":
		return false, false
	}
	return false, false
}

// redirects remembers where a statement's standard output goes, so that
// "curl URL > file" counts as a download to file.
func (sc *shellScan) redirects(s *syntax.Stmt) {
	c, ok := s.Cmd.(*syntax.CallExpr)
	if !ok {
		return
	}
	for _, rd := range s.Redirs {
		if (rd.Op != syntax.RdrOut && rd.Op != syntax.AppOut && rd.Op != syntax.RdrAll && rd.Op != syntax.AppAll && rd.Op != syntax.RdrClob) ||
			rd.Word == nil || rd.N != nil && rd.N.Value != "1" {
			continue
		}
		if w := sc.word(rd.Word); !w.dyn && w.s != "" && w.s != "/dev/null" {
			sc.st.outputs[c] = w.s
			sc.st.appends[c] = rd.Op == syntax.AppOut || rd.Op == syntax.AppAll
		}
	}
}

// trustRemoteCode reports --trust-remote-code (vLLM, SGLang, TGI, lm-eval,
// the transformers examples) and trust_remote_code=True given on a command
// line: the server runs the model repository's Python code.
func (sc *shellScan) trustRemoteCode(args []arg, ln int) {
	for _, a := range args[1:] {
		v := strings.ToLower(a.s)
		flag := strings.TrimLeft(v, "-")
		switch {
		case strings.HasPrefix(v, "--") && (flag == "trust-remote-code" || flag == "trust_remote_code" ||
			flag == "trust-remote-code=true" || flag == "trust_remote_code=true" || flag == "trust-remote-code=1"):
		case !strings.HasPrefix(v, "-") && strings.Contains(v, "trust_remote_code=true"):
			// lm_eval --model_args pretrained=…,trust_remote_code=True
		default:
			continue
		}
		sc.r.add(ruleTrustRemoteCode, ln, a.s, fmt.Sprintf("%s %s runs Python code from the model's hub repository on this node, with your credentials and GPUs; drop it, or review that code and pin the model to the reviewed commit (--revision <40-hex commit>, and --code-revision for vLLM)", prog(args[0]), a.s))
		return
	}
}

// dockerBoolOpts are docker/podman run options that take no value; every
// other long option without "=" takes the next word.
var dockerBoolOpts = map[string]bool{
	"--detach": true, "--interactive": true, "--tty": true, "--rm": true, "--privileged": true, "--init": true,
	"--publish-all": true, "--read-only": true, "--no-healthcheck": true, "--oom-kill-disable": true,
	"--quiet": true, "--sig-proxy": true, "--help": true, "--replace": true, "--systemd": true, "--tls-verify": true,
	"--http-proxy": true, "--read-only-tmpfs": true, "--no-hosts": true, "--env-host": true, "--rmi": true,
}

// dockerShortValue are docker/podman run short options that take a value.
const dockerShortValue = "aceEhlmpuvw"

// container checks docker/podman/nerdctl pull, run and create: the image,
// and the command run in it. It reports whether it handled the command.
func (sc *shellScan) container(p string, args []arg, ln int) bool {
	if len(args) > 0 && args[0].s == "container" || len(args) > 0 && args[0].s == "image" && len(args) > 1 && args[1].s == "pull" {
		args = args[1:]
	}
	if len(args) < 2 {
		return false
	}
	switch args[0].s {
	case "pull":
		rest := skipOpts(args[1:], "a", "q")
		if len(rest) > 0 && !strings.HasPrefix(rest[0].s, "-") {
			sc.r.image(ln, p+" pull", rest[0].s, rest[0].dyn)
			sc.site(rest[0], rest[0].s, ln, false, false)
		}
		return false
	case "run", "create":
	default:
		return false
	}
	rest := args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0].s, "-") && rest[0].s != "-" {
		o := rest[0].s
		rest = rest[1:]
		switch {
		case o == "--":
		case strings.HasPrefix(o, "--"):
			if !strings.Contains(o, "=") && !dockerBoolOpts[o] && len(rest) > 0 {
				rest = rest[1:]
			}
		case strings.IndexByte(dockerShortValue, o[len(o)-1]) >= 0 && len(rest) > 0:
			rest = rest[1:]
		}
		if o == "--" {
			break
		}
	}
	if len(rest) == 0 {
		return true
	}
	img := rest[0]
	sc.r.image(ln, p+" "+args[0].s, img.s, img.dyn)
	sc.site(img, img.s, ln, false, false)
	if len(rest) > 1 {
		sc.command(rest[1:], ln)
	}
	return true
}

// apptainerValueOpts are apptainer/singularity options that take a value.
var apptainerValueOpts = map[string]bool{
	"-B": true, "--bind": true, "--env": true, "--env-file": true, "-H": true, "--home": true, "-W": true,
	"--workdir": true, "-o": true, "--overlay": true, "--pwd": true, "--mount": true, "--security": true,
	"--network": true, "--network-args": true, "--apply-cgroups": true, "--dns": true, "--hostname": true,
	"-S": true, "--scratch": true, "--fusemount": true, "--app": true, "--arch": true, "--library": true,
	"--docker-login": false, "--authfile": true, "--tmpdir": true, "--section": true, "--build-arg": true,
	"--build-arg-file": true, "--bind-path": true, "--cpus": true, "--memory": true, "--oci": false,
	"--name": true, "--dir": true, "--cwd": true, "--config": true,
}

// apptainer checks apptainer/singularity pull, build, exec, run, shell,
// instance start: the image URI (docker://, oras://, library://, shub://;
// docker-archive: and local files are fine) and the command exec runs.
func (sc *shellScan) apptainer(args []arg, ln int) {
	args = skipOpts(args) // global options: -d, -s, --nv placed first
	if len(args) == 0 {
		return
	}
	sub := args[0].s
	rest := args[1:]
	if sub == "instance" && len(rest) > 0 {
		sub, rest = "instance "+rest[0].s, rest[1:]
	}
	var pos []arg
	for i := 0; i < len(rest); i++ {
		o := rest[i].s
		if strings.HasPrefix(o, "-") && len(pos) == 0 {
			if !strings.Contains(o, "=") && apptainerValueOpts[o] {
				i++
			}
			continue
		}
		pos = append(pos, rest[i])
	}
	var image int
	switch sub {
	case "exec", "run", "shell", "test", "inspect", "instance start", "instance run", "verify", "sif":
		image = 0
	case "pull", "build":
		// [output] URI
		image = len(pos) - 1
		if image > 1 {
			image = 1
		}
	default:
		return
	}
	if image < 0 || image >= len(pos) {
		return
	}
	uri := pos[image]
	sc.apptainerURI(uri, ln)
	if sub == "exec" && len(pos) > image+1 {
		sc.command(pos[image+1:], ln)
	}
}

// apptainerURI judges an Apptainer/Singularity image URI. Only a digest
// pins one: name@sha256:<hex> for docker:// and oras://, and
// library://…:sha256.<hex> for the Sylabs library.
func (sc *shellScan) apptainerURI(a arg, ln int) {
	v := a.s
	scheme, ref, ok := strings.Cut(v, "://")
	if !ok {
		return // a local .sif, a directory, docker-archive:, oci-archive:
	}
	switch scheme {
	case "docker", "oras":
		sc.r.imageNoTag(ln, "Apptainer image", ref, a.dyn, false)
		sc.site(a, ref, ln, false, true)
	case "library":
		sc.libraryImage(ln, v, ref, a.dyn)
	case "shub":
		if i := strings.LastIndex(ref, "@"); i >= 0 && isHex(ref[i+1:], 0) && len(ref)-i-1 >= 32 {
			return
		}
		if a.dyn {
			sc.r.add(ruleImageVariable, ln, v, fmt.Sprintf("Apptainer image %q is built from a variable with no pinned value in this file, so the caller decides what runs; pin it to a commit (shub://user/image@<commit>), or better, a library:// or docker:// image by digest", v))
			return
		}
		sc.r.add(ruleImageNotDigest, ln, v, fmt.Sprintf("Apptainer image %q names a Singularity Hub collection by tag, which can change (and Singularity Hub is a read-only archive now); pin the commit (shub://user/image@<commit>), or move to an image pinned by digest: docker://name@sha256:<digest>", v))
	}
}

// libraryImage judges a library:// reference: [host/]entity/collection/
// container[:tag], where only a tag "sha256.<hex>" names the image's bytes.
func (sc *shellScan) libraryImage(ln int, written, ref string, dyn bool) {
	name, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	if hex, ok := strings.CutPrefix(tag, "sha256."); ok && isHex(hex, 64) {
		return
	}
	fix := fmt.Sprintf("pin the image's digest as its tag: library://%s:sha256.<hex> (apptainer inspect or the library's web page shows it)", name)
	switch {
	case dyn:
		sc.r.add(ruleImageVariable, ln, written, fmt.Sprintf("Apptainer image %q is built from a variable with no pinned value in this file, so the caller decides what runs; %s", written, fix))
	case tag == "" || tag == "latest":
		sc.r.add(ruleImageLatest, ln, written, fmt.Sprintf("Apptainer image %q has no tag or uses :latest, so every job may get a different image; %s", written, fix))
	default:
		sc.r.add(ruleImageNotDigest, ln, written, fmt.Sprintf("Apptainer image %q is referenced by tag, not digest: whoever can push the tag decides what runs on your nodes; %s", written, fix))
	}
}

// defaultSite remembers, for Rewrite, where the literal default of
// ${NAME:=default} is written: a later "$NAME" image is pinned there.
func (sc *shellScan) defaultSite(name string, w *syntax.Word, val arg) {
	if sc.st.sites == nil || !sc.root {
		return
	}
	delete(sc.st.envSites, name)
	if s, ok := sc.literalSite(w, val); ok {
		sc.st.envSites[name] = s
	}
}

// literalSite is where the literal value of w is written in the source.
func (sc *shellScan) literalSite(w *syntax.Word, val arg) (imageSite, bool) {
	if val.dyn || val.s == "" {
		return imageSite{}, false
	}
	off, end := int(w.Pos().Offset()), int(w.End().Offset())
	if end > len(sc.src) || off >= end {
		return imageSite{}, false
	}
	raw := string(sc.src[off:end])
	if strings.Count(raw, val.s) != 1 {
		return imageSite{}, false
	}
	i := strings.Index(raw, val.s)
	return imageSite{start: off + i, end: off + i + len(val.s), line: line(w.Pos()), written: val.s}, true
}
