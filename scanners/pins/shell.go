package pins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mlwarden/mlwarden/scanners/internal/shdepth"
	"github.com/mlwarden/mlwarden/scanners/slurm"
)

// arg is one shell word after quote removal and variable resolution. dyn
// says part of it came from something we could not resolve (an unknown
// variable, a command substitution), shown as ${NAME} or $(…).
type arg struct {
	s   string
	dyn bool
	w   *syntax.Word // nil for arguments that did not come from shell (JSON RUN)
}

// shellState is what a script learns as it runs, shared by the texts it
// embeds (heredocs, sh -c strings, the RUN lines of one Dockerfile).
type shellState struct {
	env       map[string]string
	downloads []*download
	clones    []*clone
	// fetchedCommit is set after "git fetch REMOTE <commit>", so that
	// "git checkout FETCH_HEAD" counts as a pinned checkout.
	fetchedCommit bool
	depth         int

	// sites, when non-nil, collects where image references are written so
	// that Rewrite can pin them; envSites remembers literal assignments.
	sites    *[]imageSite
	envSites map[string]imageSite
	// skipped, when non-nil, collects references Rewrite must leave alone.
	skipped *[]Skipped

	// ctx bounds reading files the script names (requirements files).
	ctx context.Context
	// cwd is the directory commands run in, as far as the script tells
	// ("" is where it started, "\x00N" a directory a dynamic cd chose):
	// downloads and runs are matched by path resolved against it.
	cwd    string
	cwdDyn int
	// outputs maps a command to the file its standard output is
	// redirected to (curl URL > file).
	outputs map[*syntax.CallExpr]string
	// listed are checksum commands whose list an echo gave, already
	// applied to the files it names.
	listed map[*syntax.CallExpr]bool
	// path are the directories the script adds to PATH, resolved as
	// downloads are.
	path []string
	// appends are the commands of outputs that append (>>).
	appends map[*syntax.CallExpr]bool
	// written are the files the script writes with text it tells, by
	// resolved path (cat > f <<EOF, printf … > f).
	written map[string]*writtenFile
	// writtenBytes is the text kept in written, loopWalks the loop bodies
	// walked for the entries of a file (both bounded).
	writtenBytes, loopWalks int
}

// imageSite is where an image reference is written in a file.
type imageSite struct {
	start, end int // byte range of the reference as written
	line       int
	written    string // the reference as written
	// pyxis says the reference is in Enroot/Pyxis syntax; digestOnly that
	// its consumer does not accept name:tag@digest (Enroot, Apptainer).
	pyxis, digestOnly bool
	// action, when set, is a GitHub Actions uses: whose range runs from
	// the value to the end of its line (tail: what follows the value).
	action          bool
	actName, actRef string
	tail            string
}

type download struct {
	file string // "" when written to standard output
	key  string // file resolved against the directory it was written in
	url  string
	// noData says the download is judged only if run (cloud copies and
	// Hub downloads, whose revision is judged by hf-revision).
	noData   bool
	line     int
	r        *rep
	data     bool // weights, datasets, archives
	verified bool
	executed bool
}

type clone struct {
	dir, url, ref string
	line          int
	r             *rep
	pinned        bool
}

func newShellState() *shellState {
	return &shellState{env: map[string]string{}, ctx: context.Background(), outputs: map[*syntax.CallExpr]string{}, listed: map[*syntax.CallExpr]bool{}, appends: map[*syntax.CallExpr]bool{}}
}

// shellScan parses one shell text and reports into r.
type shellScan struct {
	st     *shellState
	r      *rep
	src    []byte
	sbatch bool
	// sbatchOpts are how slurm.Parse reads the #SBATCH directives (the
	// site's SPANK options).
	sbatchOpts []slurm.ParseOption
	// dockerfile makes a bare heredoc ("RUN <<EOF") a script, as BuildKit runs it.
	dockerfile bool
	// root says src is the file itself, so byte offsets are the file's.
	root bool
	// cur is the simple command being checked (its redirects are in
	// st.outputs).
	cur *syntax.CallExpr
	// quiet skips text that does not parse instead of reporting it (lines
	// of a PowerShell script).
	quiet bool
}

// maxShellDepth bounds nesting of sh -c strings and heredocs.
const maxShellDepth = 8

// scanShellFile checks a whole shell or sbatch script; opts are how an
// sbatch script's directives are read.
func scanShellFile(ctx context.Context, data []byte, r *rep, sbatch bool, opts ...slurm.ParseOption) {
	st := newShellState()
	st.ctx = ctx
	sc := &shellScan{st: st, r: r, src: data, sbatch: sbatch, sbatchOpts: opts, root: true}
	sc.run()
	st.finish()
}

// site records where the image value is written inside argument a, for
// Rewrite. A reference that comes whole from an earlier literal assignment
// (IMG=...; srun --container-image "$IMG") is recorded at the assignment.
func (sc *shellScan) site(a arg, value string, ln int, pyxis, digestOnly bool) {
	if sc.st.sites == nil || !sc.root || a.w == nil || value == "" {
		return
	}
	var pe *syntax.ParamExp
	n := 0
	syntax.Walk(a.w, func(node syntax.Node) bool {
		switch p := node.(type) {
		case *syntax.ParamExp:
			pe = p
			n++
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ArithmExp:
			n += 2
		}
		return true
	})
	if n > 0 {
		if n != 1 || pe.Param == nil {
			return
		}
		if pe.Exp != nil {
			// ${IMG:-default}: the default is what runs when it is used.
			switch pe.Exp.Op {
			case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
			default:
				return
			}
			if _, set := sc.st.env[pe.Param.Value]; set && pe.Exp.Op != syntax.AssignUnset && pe.Exp.Op != syntax.AssignUnsetOrNull || pe.Exp.Word == nil {
				if es, ok := sc.st.envSites[pe.Param.Value]; ok && es.written == value {
					es.pyxis, es.digestOnly = pyxis, digestOnly
					*sc.st.sites = append(*sc.st.sites, es)
				}
				return
			}
			if ds, ok := sc.literalSite(pe.Exp.Word, sc.word(pe.Exp.Word)); ok && ds.written == value {
				ds.pyxis, ds.digestOnly = pyxis, digestOnly
				*sc.st.sites = append(*sc.st.sites, ds)
			}
			return
		}
		if es, ok := sc.st.envSites[pe.Param.Value]; ok && es.written == value {
			es.pyxis, es.digestOnly = pyxis, digestOnly
			*sc.st.sites = append(*sc.st.sites, es)
		}
		return
	}
	off := int(a.w.Pos().Offset())
	raw := string(sc.src[off:a.w.End().Offset()])
	if strings.Count(raw, value) != 1 {
		return // escapes or quotes split it: leave it alone
	}
	i := strings.Index(raw, value)
	*sc.st.sites = append(*sc.st.sites, imageSite{start: off + i, end: off + i + len(value), line: ln, written: value, pyxis: pyxis, digestOnly: digestOnly})
}

// parseShell parses bash, refusing a text that nests deeper than the
// recursive parser can take (shdepth: a stack overflow kills the process).
func parseShell(src []byte) (*syntax.File, error) {
	if d, ok := shdepth.Check(src); !ok {
		return nil, fmt.Errorf("nests %d levels deep, more than the %d this check parses", d, shdepth.MaxDepth)
	}
	p := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash))
	return p.Parse(bytes.NewReader(src), "")
}

// run parses sc.src and walks it in source order. It reports whether the text
// parsed.
func (sc *shellScan) run() bool {
	if sc.sbatch {
		// sbatch reads its directives whatever the shell makes of the rest.
		sc.sbatchImages()
	}
	f, err := parseShell(sc.src)
	if err != nil && sc.quiet {
		return false
	}
	if err != nil {
		line := 0
		var pe syntax.ParseError
		var le syntax.LangError
		switch {
		case errors.As(err, &pe):
			line = int(pe.Pos.Line())
		case errors.As(err, &le):
			line = int(le.Pos.Line())
		}
		sc.r.add(ruleUnparsed, line, "", fmt.Sprintf("shell syntax could not be parsed (%v), so the commands in it were not checked for pins; fix the syntax", err))
		return false
	}
	syntax.Walk(f, sc.visit)
	return true
}

// visit checks one node of the syntax tree; the walk is in source order.
func (sc *shellScan) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		sc.heredocs(n)
		sc.redirects(n)
		if sc.fileLoop(n) {
			return false
		}
	case *syntax.CallExpr:
		sc.call(n)
	case *syntax.DeclClause:
		sc.decl(n)
	case *syntax.BinaryCmd:
		if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
			sc.pipe(n)
		}
	}
	return true
}

func line(p syntax.Pos) int { return int(p.Line()) }

// nested checks a shell text embedded at line first of this text (an sh -c
// string, a heredoc).
func (sc *shellScan) nested(text string, first int, where string) {
	if sc.st.depth >= maxShellDepth {
		return
	}
	sc.st.depth++
	defer func() { sc.st.depth-- }()
	child := &shellScan{st: sc.st, r: sc.r.sub(first, where), src: []byte(text)}
	child.run()
}

// nestedJob checks a batch script submitted from this text (the
// here-document of sbatch <<EOF) as a job script: its #SBATCH directives
// as sbatch reads them, then its commands, at line first on.
func (sc *shellScan) nestedJob(text string, first int) {
	if sc.st.depth >= maxShellDepth {
		return
	}
	sc.st.depth++
	defer func() { sc.st.depth-- }()
	child := &shellScan{st: sc.st, r: sc.r.sub(first, ""), src: []byte(text), sbatch: true, sbatchOpts: sc.sbatchOpts}
	child.run()
}

// --- words ---

func (sc *shellScan) word(w *syntax.Word) arg {
	var b strings.Builder
	dyn := false
	sc.parts(w.Parts, &b, &dyn, false, false)
	return arg{s: b.String(), dyn: dyn, w: w}
}

// script is a word that is itself a script (sh -c WORD, eval WORD, ssh
// host WORD) after quote removal, with its lines kept: a backslash-newline
// stays (the inner shell reads it as the same continuation) and an
// unresolved $(…) keeps the newlines it spanned, so that line n of the
// text is line n after the word's first.
func (sc *shellScan) script(w *syntax.Word) arg {
	var b strings.Builder
	dyn := false
	sc.parts(w.Parts, &b, &dyn, false, true)
	return arg{s: b.String(), dyn: dyn, w: w}
}

func (sc *shellScan) words(ws []*syntax.Word) []arg {
	out := make([]arg, len(ws))
	for i, w := range ws {
		out[i] = sc.word(w)
	}
	return out
}

func (sc *shellScan) parts(ps []syntax.WordPart, b *strings.Builder, dyn *bool, quoted, keepLines bool) {
	var last uint
	sc.partsAt(ps, b, dyn, quoted, keepLines, &last)
}

// partsAt writes ps; with keepLines, the lines between parts (where the
// parser dropped a backslash-newline) come back as backslash-newlines.
func (sc *shellScan) partsAt(ps []syntax.WordPart, b *strings.Builder, dyn *bool, quoted, keepLines bool, last *uint) {
	for _, p := range ps {
		if keepLines {
			if l := p.Pos().Line(); *last > 0 && l > *last {
				b.WriteString(strings.Repeat("\\\n", int(l-*last)))
			}
			*last = p.End().Line()
		}
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeLit(p.Value, quoted))
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if keepLines {
				*last = p.Pos().Line()
			}
			sc.partsAt(p.Parts, b, dyn, true, keepLines, last)
			if keepLines {
				*last = p.End().Line()
			}
		case *syntax.ParamExp:
			v, ok := sc.param(p)
			if !ok {
				*dyn = true
			}
			b.WriteString(v)
		case *syntax.CmdSubst, *syntax.ProcSubst:
			*dyn = true
			b.WriteString("$(…")
			if keepLines {
				b.WriteString(strings.Repeat("\n", int(p.End().Line()-p.Pos().Line())))
			}
			b.WriteString(")")
		default:
			*dyn = true
			b.WriteString("${…}")
		}
	}
}

// unescapeLit removes backslash escapes as the shell would.
func unescapeLit(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch {
		case n == '\n':
			i++
		case !quoted || strings.IndexByte("$`\"\\", n) >= 0:
			b.WriteByte(n)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// param resolves $NAME, ${NAME} and ${NAME:-default} from earlier
// assignments; anything else is unresolved.
func (sc *shellScan) param(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil || p.Repl != nil || p.NestedParam != nil {
		return "${…}", false
	}
	name := p.Param.Value
	v, ok := sc.st.env[name]
	if p.Exp != nil {
		switch p.Exp.Op {
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
			if ok && (v != "" || p.Exp.Op == syntax.DefaultUnset || p.Exp.Op == syntax.AssignUnset) {
				return v, true
			}
			if p.Exp.Word == nil {
				return "", true
			}
			a := sc.word(p.Exp.Word)
			if p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull {
				// ${IMG:=default} (often as : "${IMG:=…}") sets IMG too.
				if a.dyn {
					delete(sc.st.env, name)
				} else {
					sc.st.env[name] = a.s
				}
				sc.defaultSite(name, p.Exp.Word, a)
			}
			return a.s, !a.dyn
		default:
			return "${" + name + "}", false
		}
	}
	if !ok {
		return "${" + name + "}", false
	}
	return v, true
}

// --- assignments ---

func (sc *shellScan) assign(as *syntax.Assign, ln int) {
	if as.Name == nil || as.Naked && as.Value == nil {
		return
	}
	name := as.Name.Value
	if as.Array != nil || as.Index != nil {
		delete(sc.st.env, name)
		return
	}
	val := arg{}
	if as.Value != nil {
		val = sc.word(as.Value)
	}
	sc.envVar(name, val, ln)
	if name == "PATH" {
		sc.pathSet(val.s)
	}
	if sc.st.sites != nil && sc.root {
		delete(sc.st.envSites, name)
		if as.Value != nil && !val.dyn && !as.Append && val.s != "" {
			off := int(as.Value.Pos().Offset())
			raw := string(sc.src[off:as.Value.End().Offset()])
			if strings.Count(raw, val.s) == 1 {
				i := strings.Index(raw, val.s)
				sc.st.envSites[name] = imageSite{start: off + i, end: off + i + len(val.s), line: ln, written: val.s}
			}
		}
	}
	if val.dyn {
		delete(sc.st.env, name)
		return
	}
	if as.Append {
		sc.st.env[name] += val.s
		return
	}
	sc.st.env[name] = val.s
}

// envVar reports environment variables that change where packages come from.
func (sc *shellScan) envVar(name string, val arg, ln int) {
	envExtraIndex(sc.r, name, val.s, ln)
}

func envExtraIndex(r *rep, name, val string, ln int) {
	switch name {
	case "PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_INDEX":
		r.add(ruleExtraIndex, ln, name+"="+val, fmt.Sprintf("%s adds a second package index (%q): pip and uv may take a same-named package from whichever index serves the higher version (dependency confusion, as in the 2022 torchtriton incident); use one index that proxies the public one, or pin every package with --hash", name, val))
	}
}

func (sc *shellScan) decl(d *syntax.DeclClause) {
	for _, as := range d.Args {
		sc.assign(as, line(as.Pos()))
	}
}

// --- commands ---

func (sc *shellScan) call(c *syntax.CallExpr) {
	ln := line(c.Pos())
	if len(c.Args) == 0 {
		for _, as := range c.Assigns {
			sc.assign(as, ln)
		}
		return
	}
	for _, as := range c.Assigns {
		if as.Name != nil && as.Value != nil {
			sc.envVar(as.Name.Value, sc.word(as.Value), ln)
		}
	}
	sc.cur = c
	sc.command(sc.words(c.Args), ln)
}

// prog is the base name of a command word.
func prog(a arg) string { return path.Base(a.s) }

func isShell(p string) bool {
	switch p {
	case "sh", "bash", "zsh", "dash", "ksh", "ash", "busybox":
		return true
	}
	return false
}

func isPython(p string) bool {
	return p == "python" || strings.HasPrefix(p, "python2") || strings.HasPrefix(p, "python3")
}

func isInterpreter(p string) bool {
	switch p {
	case "perl", "ruby", "node", "php", "pwsh", "source", ".", "eval":
		return true
	}
	return isShell(p) || isPython(p)
}

// unwrap drops command prefixes that run the rest as a command (sudo, env,
// exec, time, nohup, nice, timeout, stdbuf).
func unwrap(args []arg) []arg {
	for len(args) > 0 {
		switch prog(args[0]) {
		case "sudo", "doas":
			args = skipOpts(args[1:], "u", "g", "U", "C", "D", "r", "t", "T", "p", "h")
		case "env":
			args = args[1:]
			for len(args) > 0 && (strings.HasPrefix(args[0].s, "-") || strings.Contains(args[0].s, "=")) {
				if args[0].s == "-u" || args[0].s == "-C" || args[0].s == "-S" {
					args = args[1:]
				}
				if len(args) > 0 {
					args = args[1:]
				}
			}
		case "exec", "nohup", "time", "command", "builtin", "stdbuf", "chronic", "catchsegv":
			args = skipOpts(args[1:])
		case "nice", "ionice":
			args = skipOpts(args[1:], "n", "c")
		case "timeout":
			args = skipOpts(args[1:], "s", "k")
			if len(args) > 0 {
				args = args[1:] // the duration
			}
		default:
			return args
		}
	}
	return args
}

// skipOpts drops leading options; the short options named in withValue take
// the next word as their value.
func skipOpts(args []arg, withValue ...string) []arg {
	for len(args) > 0 && strings.HasPrefix(args[0].s, "-") && args[0].s != "-" {
		o := args[0].s
		args = args[1:]
		if o == "--" {
			break
		}
		if len(o) == 2 && len(args) > 0 {
			for _, v := range withValue {
				if o[1:] == v {
					args = args[1:]
					break
				}
			}
		}
	}
	return args
}

// command checks one simple command, given as its words.
func (sc *shellScan) command(all []arg, ln int) {
	args := unwrap(all)
	if len(args) == 0 {
		return
	}
	if r := sc.r.inCommand(ln, all); r != sc.r {
		defer func(prev *rep) { sc.r = prev }(sc.r)
		sc.r = r
	}
	p := prog(args[0])
	switch p {
	case "srun", "salloc", "sbatch", "xargs", "ssh", "su", "runuser":
		// The command they run is checked on its own.
	default:
		sc.trustRemoteCode(args, ln)
	}
	switch {
	case p == "srun" || p == "salloc" || p == "sbatch":
		sc.slurmRun(args, ln)
		return
	case p == "xargs":
		sc.command(skipXargs(args[1:]), ln)
		return
	case p == "ssh":
		sc.ssh(args[1:], ln)
		return
	case p == "su" || p == "runuser":
		sc.su(args[1:], ln)
		return
	case p == "cd" || p == "pushd":
		sc.cd(args[1:])
	case p == "echo" || p == "printf":
		sc.echoWrite(p, args[1:], ln)
	case isPip(p):
		if len(args) > 1 && args[1].s == "install" {
			sc.pipInstall(args[2:], ln, false)
		}
		sc.pipConfig(args[1:], ln)
	case isPython(p):
		for i := 1; i+2 < len(args) && strings.HasPrefix(args[i].s, "-"); i++ {
			if args[i].s == "-m" {
				switch {
				case args[i+1].s == "pip" && args[i+2].s == "install":
					sc.pipInstall(args[i+3:], ln, false)
				case args[i+1].s == "pipx":
					sc.pipx(args[i+2:], ln)
				}
				break
			}
		}
	case p == "pipx":
		sc.pipx(args[1:], ln)
	case p == "uv":
		sc.uv(args[1:], ln)
	case p == "uvx":
		sc.uvTool("uvx", args[1:], ln)
	case p == "conda" || p == "mamba" || p == "micromamba":
		sc.conda(p, args[1:], ln)
	case p == "npm" || p == "pnpm" || p == "yarn" || p == "npx" || p == "bun" || p == "bunx":
		sc.npmInstall(p, args[1:], ln)
	case p == "go":
		sc.goCmd(args[1:], ln)
	case p == "curl" || p == "wget" || p == "curl.exe" || p == "wget.exe":
		sc.fetch(strings.TrimSuffix(p, ".exe"), args[1:], ln, sc.cur)
	case p == "aws" || p == "gsutil" || p == "gcloud" || p == "rclone" || p == "azcopy" || p == "s5cmd" || p == "mc":
		sc.cloudCopy(p, args[1:], ln)
	case p == "git":
		sc.git(args[1:], ln)
	case p == "apptainer" || p == "singularity":
		sc.apptainer(args[1:], ln)
		return
	case p == "enroot":
		if len(args) > 1 && args[1].s == "import" {
			for _, a := range args[2:] {
				if strings.HasPrefix(a.s, "docker://") {
					if _, local := pyxisImage(a.s); !local {
						sc.r.imageNoTag(ln, "Enroot image", strings.TrimPrefix(a.s, "docker://"), a.dyn, true)
						sc.site(a, strings.TrimPrefix(a.s, "docker://"), ln, true, true)
					}
				}
			}
		}
	case p == "docker" || p == "podman" || p == "nerdctl":
		if sc.container(p, args[1:], ln) {
			return
		}
	case p == "module" || p == "ml":
		sc.module(p, args[1:], ln)
	case p == "huggingface-cli" || p == "hf":
		sc.hfDownload(args[1:], ln)
	case p == "sha256sum" || p == "sha512sum" || p == "sha384sum" || p == "sha224sum" || p == "sha1sum" ||
		p == "md5sum" || p == "b2sum" || p == "shasum" || p == "cksum" || p == "gpgv" || p == "minisign":
		if !sc.st.listed[sc.cur] {
			sc.verify(args[1:])
		}
	case p == "gpg" || p == "cosign" || p == "openssl":
		for _, a := range args[1:] {
			if a.s == "--verify" || a.s == "verify-blob" || a.s == "dgst" {
				sc.verify(args[1:])
				break
			}
		}
	case osPackageManagers[p] != "":
		sc.osPackages(p, args[1:], ln)
	case p == "choco" || p == "choco.exe" || p == "cinst":
		sc.choco(p, args[1:], ln)
	case p == "nuget" || p == "nuget.exe" || p == "dotnet" || p == "dotnet.exe" || p == "msbuild" || p == "msbuild.exe":
		sc.nuget(strings.TrimSuffix(p, ".exe"), args[1:], ln)
	}
	sc.execCheck(args, ln)
}

// argLine is the line a word starts on, or ln for words that did not come
// from shell.
func argLine(a arg, ln int) int {
	if a.w == nil {
		return ln
	}
	return line(a.w.Pos())
}

// execCheck reports a downloaded file that runs before it is verified, and
// downloads fed straight into an interpreter by $(…) or <(…); it checks
// the scripts given to sh -c, eval and python -c as scripts.
func (sc *shellScan) execCheck(args []arg, ln int) {
	p := prog(args[0])
	if isInterpreter(p) {
		for _, a := range args[1:] {
			if a.w != nil && wordFetches(a.w) {
				sc.r.add(ruleCurlPipeShell, ln, a.s, fmt.Sprintf("%s runs code fetched by a command or process substitution (%s) at once, unreviewed and unverified; download to a file, check its sha256 (echo '<sha256>  file' | sha256sum -c -), then run it", p, shorten(a.s)))
				return
			}
		}
		if p == "eval" {
			// eval joins its arguments into one script.
			sc.inlineScript(args[1:], ln)
			return
		}
		// sh -c 'commands' and python -c 'code': check the commands too.
		for i, a := range args[1:] {
			if !(isShell(p) || isPython(p)) || !shortOpt(a.s, 'c') {
				continue
			}
			j := i + 2
			if j < len(args) && args[j].w != nil {
				if isPython(p) {
					if !args[j].dyn {
						scanPythonCalls([]byte(args[j].s), sc.r.sub(argLine(args[j], ln), ""), sc.st)
					}
				} else {
					sc.inlineScript(args[j:j+1], ln)
				}
			}
			return
		}
		// sh FILE / python FILE / source FILE
		rest := skipOpts(args[1:], "m", "W", "X", "o", "O")
		if len(rest) > 0 {
			sc.executes(rest[0].s, ln)
		}
		return
	}
	if strings.Contains(args[0].s, "/") {
		sc.executes(args[0].s, ln)
	} else if !args[0].dyn {
		sc.executesBare(args[0].s, ln)
	}
}

// defaultPath is the PATH of a shell started without one (and of Docker
// images that set none).
var defaultPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// executesBare reports a file run by a bare name (exe, RUN ["exe"], sh
// -c "exe") that was downloaded and not verified: the shell finds it on
// PATH, so a download to a directory on it (the defaults, and what the
// script adds to PATH) is what runs; a download of that name to the
// directory the command runs in is the file its author means to run
// (Scorecard reads it the same way). Builtins and commands of the same
// name downloaded elsewhere are not matched.
func (sc *shellScan) executesBare(name string, ln int) {
	if name == "" || !validBareName(name) {
		return
	}
	here := ""
	for _, d := range sc.st.downloads {
		if d.file == "" || path.Base(d.key) != name {
			continue
		}
		if here == "" {
			here = sc.resolve(name)
		}
		dir := path.Dir(d.key)
		onPath := d.key == here
		for _, p := range defaultPath {
			onPath = onPath || dir == p
		}
		for _, p := range sc.st.path {
			onPath = onPath || dir == p
		}
		if !onPath {
			continue
		}
		d.executed = true
		if !d.verified {
			sc.r.add(ruleDownloadExec, ln, name, fmt.Sprintf("%s was downloaded to %s from %s earlier in the script and is run here by its name without checksum verification: whatever the server returned runs; verify it first: echo '<sha256>  %s' | sha256sum -c -", name, d.file, d.url, d.file))
		}
	}
}

// validBareName reports a command name that can be a file the script
// downloaded: not an option, an assignment or a shell keyword.
func validBareName(s string) bool {
	if strings.HasPrefix(s, "-") || strings.ContainsAny(s, "=$ \t\n") {
		return false
	}
	switch s {
	case ".", "..", "[", "[[", "test", "true", "false", "echo", "printf", "exit", "export", "set", "unset", "read", "cd":
		return false
	}
	return true
}

// pathSet follows PATH assignments: each entry without an expansion is a
// directory a bare command name is looked up in ("." and relative entries
// against the current directory).
func (sc *shellScan) pathSet(val string) {
	for _, e := range strings.Split(val, ":") {
		if e == "" || strings.Contains(e, "$") {
			continue
		}
		sc.st.path = append(sc.st.path, sc.resolve(e))
	}
}

// shortOpt reports whether s is a cluster of short options that holds c
// (-c, -ec, -xc), as sh reads "-c".
func shortOpt(s string, c byte) bool {
	if len(s) < 2 || s[0] != '-' || s[1] == '-' {
		return false
	}
	return strings.IndexByte(s[1:], c) >= 0 && strings.Trim(s[1:], "abcefhiklmnprstuvxBCEHPT") == ""
}

// inlineScript checks words that a shell runs as one script (sh -c WORD,
// eval WORDS..., ssh host WORDS..., su -c WORD), at the line of the first.
// Parts that could not be resolved stay in the text as ${NAME} or $(…),
// which the inner parse treats as dynamic.
func (sc *shellScan) inlineScript(words []arg, ln int) {
	if len(words) == 0 {
		return
	}
	var b strings.Builder
	first := argLine(words[0], ln)
	for i, a := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a.w == nil {
			b.WriteString(a.s)
			continue
		}
		b.WriteString(sc.script(a.w).s)
	}
	sc.nested(b.String(), first, "")
}

// executes reports a file run at line ln that was downloaded and not
// verified. Files are matched by path, resolved against the directory each
// command ran in: running ./x is not running a /tmp/x downloaded earlier.
func (sc *shellScan) executes(file string, ln int) {
	if file == "" {
		return
	}
	key := sc.resolve(file)
	for _, d := range sc.st.downloads {
		if d.file == "" || d.key != key {
			continue
		}
		d.executed = true
		if !d.verified {
			sc.r.add(ruleDownloadExec, ln, file, fmt.Sprintf("%s was downloaded from %s earlier in the script and is run here without checksum verification: whatever the server returned runs; verify it first: echo '<sha256>  %s' | sha256sum -c -", file, d.url, file))
		}
	}
}

// resolve turns a path into the key downloads are matched by: a clean
// absolute path, or a path under the directory the script is in now.
func (sc *shellScan) resolve(file string) string {
	if strings.HasPrefix(file, "~/") || file == "~" {
		file = "$HOME" + file[1:]
	}
	switch {
	case strings.HasPrefix(file, "/") || strings.HasPrefix(file, "$"):
		return path.Clean(file)
	case strings.HasPrefix(sc.st.cwd, "/"):
		return path.Join(sc.st.cwd, file)
	}
	return path.Join("/\x00cwd", sc.st.cwd, file)
}

// cd follows the directory the script runs in.
func (sc *shellScan) cd(args []arg) {
	args = skipOpts(args)
	switch {
	case len(args) == 0 || args[0].s == "~" || args[0].s == "-":
		sc.st.cwdDyn++
		sc.st.cwd = fmt.Sprintf("\x00%d", sc.st.cwdDyn)
	case args[0].dyn:
		sc.st.cwdDyn++
		sc.st.cwd = fmt.Sprintf("\x00%d", sc.st.cwdDyn)
	case strings.HasPrefix(args[0].s, "/"):
		sc.st.cwd = path.Clean(args[0].s)
	default:
		sc.st.cwd = path.Join(sc.st.cwd, args[0].s)
	}
}

// wordFetches reports whether a word holds a $(…) or <(…) that downloads.
func wordFetches(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		var stmts []*syntax.Stmt
		switch n := n.(type) {
		case *syntax.CmdSubst:
			stmts = n.Stmts
		case *syntax.ProcSubst:
			stmts = n.Stmts
		default:
			return !found
		}
		for _, s := range stmts {
			if stmtFetches(s) {
				found = true
			}
		}
		return !found
	})
	return found
}

// stmtFetches reports whether a statement runs curl, wget or PowerShell's
// Invoke-WebRequest writing to standard output.
func stmtFetches(s *syntax.Stmt) bool {
	found := false
	syntax.Walk(s, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return !found
		}
		sc := &shellScan{st: newShellState()}
		if f, ok := stdoutFetch(unwrap(sc.words(c.Args))); ok && !immutableURL(f.url) {
			found = true
		}
		return !found
	})
	return found
}

// stdoutFetch reports a download written to standard output: curl or
// wget without an output file, or PowerShell's iwr/irm.
func stdoutFetch(args []arg) (fetched, bool) {
	if len(args) == 0 {
		return fetched{}, false
	}
	p := strings.TrimSuffix(strings.ToLower(prog(args[0])), ".exe")
	switch p {
	case "curl", "wget":
		f, ok := fetchArgs(p, args[1:])
		return f, ok && f.stdout
	case "iwr", "irm", "invoke-webrequest", "invoke-restmethod":
		for _, a := range args[1:] {
			if strings.EqualFold(a.s, "-OutFile") {
				return fetched{}, false
			}
		}
		for _, a := range args[1:] {
			if !strings.HasPrefix(a.s, "-") {
				return fetched{url: a.s, stdout: true}, true
			}
		}
		return fetched{url: "(URL)", stdout: true}, true
	}
	return fetched{}, false
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// pipe reports curl|sh (a download to standard output piped into an
// interpreter) and curl|tar; it records curl URL | tee FILE as a download
// to FILE, and echo 'HASH  FILE' | sha256sum -c as verifying FILE only.
func (sc *shellScan) pipe(b *syntax.BinaryCmd) {
	var stages []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) {
			flatten(bc.X)
			flatten(bc.Y)
			return
		}
		stages = append(stages, s)
	}
	flatten(b.X)
	flatten(b.Y)
	words := make([][]arg, len(stages))
	for i, st := range stages {
		if c, ok := st.Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 {
			words[i] = unwrap(sc.words(c.Args))
		}
	}
	for i := 0; i+1 < len(stages); i++ {
		args := words[i]
		if len(args) == 0 {
			continue
		}
		if p := prog(args[0]); (p == "echo" || p == "printf") && len(words[i+1]) > 0 && isChecksumTool(prog(words[i+1][0])) {
			sc.verifyListed(args[1:], words[i+1][1:])
			if c, ok := stages[i+1].Cmd.(*syntax.CallExpr); ok {
				sc.st.listed[c] = true
			}
			continue
		}
		f, ok := stdoutFetch(args)
		if !ok || immutableURL(f.url) {
			continue
		}
		fp := prog(args[0])
		for _, nargs := range words[i+1:] {
			if len(nargs) == 0 {
				continue
			}
			np := strings.TrimSuffix(strings.ToLower(prog(nargs[0])), ".exe")
			switch {
			case isInterpreter(np) || np == "iex" || np == "invoke-expression" || np == "powershell":
				sc.r.add(ruleCurlPipeShell, line(stages[i].Pos()), f.url, fmt.Sprintf("%s %s is piped into %s, which runs whatever the server returns, unreviewed and unverified; download to a file, check it (echo '<sha256>  file' | sha256sum -c -), then run it", fp, f.url, prog(nargs[0])))
			case np == "tar" || np == "bsdtar" || np == "unzip" || np == "gunzip" || np == "zstd" || np == "xz" || np == "bunzip2":
				sc.r.add(ruleDownloadNoChecksum, line(stages[i].Pos()), f.url, fmt.Sprintf("%s %s is unpacked by %s straight from the network with no checksum; download to a file, verify it (echo '<sha256>  file' | sha256sum -c -), then unpack it", fp, f.url, np))
			case np == "tee":
				for _, t := range skipOpts(nargs[1:]) {
					if !t.dyn && t.s != "/dev/null" {
						sc.record(&download{file: t.s, url: f.url, line: line(stages[i].Pos()), data: isData(f.url) || isData(t.s)})
					}
				}
				continue
			default:
				continue
			}
			break
		}
	}
}

func isChecksumTool(p string) bool {
	switch p {
	case "sha256sum", "sha512sum", "sha384sum", "sha224sum", "sha1sum", "md5sum", "b2sum", "shasum", "cksum":
		return true
	}
	return false
}

// verifyListed marks as verified the downloads that an echoed checksum
// line ("<hash>  FILE") names, when the checksum tool checks (-c).
func (sc *shellScan) verifyListed(echoed, tool []arg) {
	check := false
	for _, a := range tool {
		if a.s == "-c" || a.s == "--check" || shortOpt(a.s, 'c') {
			check = true
		}
	}
	if !check {
		return
	}
	var files []string
	for _, a := range echoed {
		for _, l := range strings.Split(strings.ReplaceAll(a.s, `\n`, "\n"), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				files = append(files, strings.TrimPrefix(f[len(f)-1], "*"))
			}
		}
	}
	if len(files) == 0 {
		for _, d := range sc.st.downloads {
			d.verified = true // the list comes from somewhere we cannot read
		}
		return
	}
	for _, f := range files {
		key := sc.resolve(f)
		for _, d := range sc.st.downloads {
			if d.key == key {
				d.verified = true
			}
		}
	}
}

// heredocs checks the body of a heredoc fed to a shell or Python, and the
// job script of "sbatch <<EOF" (or "cat <<EOF | sbatch"), as the reader
// gets it: expanded by this shell when the delimiter is unquoted.
func (sc *shellScan) heredocs(s *syntax.Stmt) {
	if rd := slurm.SubmitsHeredoc(s); rd != nil {
		if body, ok := slurm.HeredocBody(sc.src, rd, sc.param); ok {
			sc.nestedJob(body, line(rd.Hdoc.Pos()))
		}
		if _, pipe := s.Cmd.(*syntax.BinaryCmd); pipe {
			return
		}
	}
	for _, rd := range s.Redirs {
		if rd.Hdoc == nil || (rd.Op != syntax.Hdoc && rd.Op != syntax.DashHdoc) {
			continue
		}
		body, ok := slurm.HeredocBody(sc.src, rd, sc.param)
		if !ok {
			continue
		}
		first := line(rd.Hdoc.Pos())
		var args []arg
		if c, ok := s.Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 {
			args = sc.words(c.Args)
		}
		shell, python := readsStdinScript(sc, args, 0)
		if u := unwrap(args); len(u) > 0 && prog(u[0]) == "sbatch" {
			continue // the job script, checked above when sbatch reads it
		}
		sc.heredocWrite(s, rd, args)
		switch {
		case s.Cmd == nil && sc.dockerfile:
			sc.nested(body, first, "")
		case shell:
			sc.nested(body, first, "")
		case python:
			scanPython([]byte(body), sc.r.sub(first, ""))
		}
	}
}

// --- sbatch ---

// sbatchImages reports the images the script's #SBATCH directives give to
// pyxis, read as sbatch reads them (scanners/slurm): only before the first
// command, quotes removed, a value cut at an unescaped '#', options
// abbreviated, one image per heterogeneous-job component. Every
// --container-image setting is judged, an overridden one too: it is
// what runs once the later line goes.
//
// A value cut at '#' is judged as what Slurm receives. What is left of
// Enroot's REGISTRY#IMAGE form is a registry host alone
// ("registry.example.com"), which names no image: the job fails to start
// instead of running a movable tag, so pins reports nothing there and the
// misconfig check's misconfig/sbatch-value-truncated says what Slurm
// receives and how to quote the value; mlwarden pin leaves it alone and
// says why. A cut value that still names an image ("ubuntu:22.04#old"
// gives "ubuntu:22.04") is judged as that image.
func (sc *shellScan) sbatchImages() {
	s := slurm.Parse(sc.src, sc.sbatchOpts...)
	var lines []int // line starts, for Rewrite's sites
	for _, st := range s.Settings {
		if st.Name != "container-image" || st.Value == "" {
			continue
		}
		img := st.Value
		if st.Truncated && registryHost(img) {
			sc.skip(st, s, fmt.Sprintf("an unescaped '#' cuts this #SBATCH value, so Slurm receives only %q (misconfig/sbatch-value-truncated); quote the value or escape the '#' as \\#, then pin it", img))
			continue
		}
		docker, local := pyxisImage(img)
		if local {
			continue
		}
		sc.r.imageNoTag(st.Line, "#SBATCH --container-image", img, strings.Contains(img, "$"), true)
		switch {
		case sc.st.sites == nil || !sc.root:
		case st.ValueSpan != (slurm.Span{}):
			if lines == nil {
				lines = lineStarts(sc.src)
			}
			off := lines[st.Line-1]
			*sc.st.sites = append(*sc.st.sites, imageSite{start: off + st.ValueSpan.Start, end: off + st.ValueSpan.End, line: st.Line, written: img, pyxis: true, digestOnly: true})
		case !hasDigest(docker):
			sc.skip(st, s, "it is written with quotes or escapes inside it, or on the line after its option, so it cannot be rewritten in place; pin it by hand")
		}
	}
}

// skip records, for Rewrite, a directive's image that it must leave alone.
func (sc *shellScan) skip(st slurm.Setting, s *slurm.Script, reason string) {
	if sc.st.skipped == nil || !sc.root {
		return
	}
	ref := st.Value
	for _, d := range s.Directives {
		if d.Line == st.Line && st.Truncated && d.Truncated != nil {
			// As written: the option's name and '=' aside.
			ref = d.Truncated.Written
			if opt, val, ok := strings.Cut(ref, "="); ok && strings.HasPrefix(opt, "-") {
				ref = val
			}
		}
	}
	*sc.st.skipped = append(*sc.st.skipped, Skipped{Line: st.Line, Ref: ref, Reason: reason})
}

// registryHost reports whether ref, in Enroot syntax, is a registry host
// and nothing else ("registry.example.com", "user@localhost:5000"): no
// repository path, and a name with a dot or localhost, which Docker Hub's
// official images never have.
func registryHost(ref string) bool {
	if at := strings.LastIndex(ref, "@"); at >= 0 {
		ref = ref[at+1:] // USER@REGISTRY
	}
	if ref == "" || strings.ContainsAny(ref, "/#") {
		return false
	}
	host, port, hasPort := strings.Cut(ref, ":")
	if hasPort && (port == "" || strings.Trim(port, "0123456789") != "") {
		return false // IMAGE:TAG
	}
	return host == "localhost" || strings.Contains(host, ".")
}

// slurmRun checks srun/salloc/sbatch options and the command srun runs.
func (sc *shellScan) slurmRun(args []arg, ln int) {
	rest := sc.slurmOptions(args, ln)
	if prog(args[0]) == "srun" && len(rest) > 0 {
		sc.command(rest, ln)
	}
}

// slurmCommand returns the command srun runs: the words after its options.
func slurmCommand(args []arg) []arg {
	return (&shellScan{}).slurmOptions(args, 0)
}

// slurmOptions reads srun/salloc/sbatch options, checking the images they
// name when sc reports, and returns the words after them.
func (sc *shellScan) slurmOptions(args []arg, ln int) []arg {
	rest := args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0].s, "-") {
		opt := rest[0]
		o := opt.s
		rest = rest[1:]
		if o == "--" {
			break
		}
		name, val, hasVal := strings.Cut(o, "=")
		takesValue := !hasVal && slurmTakesValue(name)
		if takesValue && len(rest) > 0 {
			if name == "--container-image" && sc.r != nil {
				sc.slurmImage(rest[0], rest[0].s, ln)
			}
			if name == "--wrap" && sc.r != nil {
				sc.inlineScript(rest[:1], ln)
			}
			rest = rest[1:]
			continue
		}
		switch {
		case sc.r == nil:
		case hasVal && name == "--container-image":
			sc.slurmImage(opt, val, ln)
		case hasVal && name == "--wrap":
			sc.nested(val, argLine(opt, ln), "")
		}
	}
	return rest
}

func (sc *shellScan) slurmImage(a arg, value string, ln int) {
	if _, local := pyxisImage(value); !local {
		sc.r.imageNoTag(ln, "srun --container-image", value, a.dyn, true)
		sc.site(a, value, ln, true, true)
	}
}

// slurmTakesValue says whether a Slurm option given without "=" takes the
// next word as its value.
func slurmTakesValue(o string) bool {
	if !strings.HasPrefix(o, "--") {
		// Short options: those that take a value, unless joined (-N2).
		return len(o) == 2 && strings.ContainsRune("AbcDdeGiJLmMnNopqrSTtwxWC", rune(o[1]))
	}
	switch o {
	case "--exclusive", "--pty", "--overlap", "--unbuffered", "--label", "--no-kill", "--quiet", "--verbose",
		"--container-mount-home", "--no-container-mount-home", "--container-remap-root", "--no-container-remap-root",
		"--container-writable", "--container-readonly", "--container-entrypoint", "--no-container-entrypoint",
		"--container-env-all", "--no-container-entrypoint-log", "--mpi-verbose", "--kill-on-bad-exit", "--wait-all-nodes",
		"--exact", "--whole", "--nice", "--spread-job", "--use-min-nodes", "--hold", "--contiguous", "--oversubscribe",
		"--requeue", "--no-requeue", "--help", "--usage", "--test-only":
		return false
	}
	return true
}

// module checks "module load NAME" and "ml NAME" for a version.
func (sc *shellScan) module(p string, args []arg, ln int) {
	if len(args) == 0 {
		return
	}
	switch {
	case p == "module" && (args[0].s == "load" || args[0].s == "add" || args[0].s == "try-load"):
		args = args[1:]
	case p == "ml" && !strings.HasPrefix(args[0].s, "-") && !isMLSubcommand(args[0].s):
	case p == "ml" && (args[0].s == "load" || args[0].s == "add"):
		args = args[1:]
	default:
		return
	}
	for _, a := range args {
		if strings.HasPrefix(a.s, "-") || a.dyn || a.s == "" {
			continue
		}
		if !strings.Contains(a.s, "/") {
			sc.r.add(ruleModuleUnversioned, ln, a.s, fmt.Sprintf("module %q is loaded without a version, so the site's default (which changes when a new one is installed) is used; load an explicit version: module load %s/<version>", a.s, a.s))
		}
	}
}

func isMLSubcommand(s string) bool {
	switch s {
	case "purge", "list", "avail", "spider", "unload", "swap", "show", "save", "restore", "help", "whatis", "keyword", "use", "unuse", "reset", "savelist", "describe", "mt", "table", "overview", "is-loaded", "is-avail", "load", "add", "try-load":
		return true
	}
	return false
}

// Skipped is an unpinned image reference Rewrite left alone, and why.
type Skipped struct {
	Line   int
	Ref    string
	Reason string
}

// lineStarts returns where each line of data starts.
func lineStarts(data []byte) []int {
	// By IndexByte, which skips long lines (a notebook's base64 outputs)
	// many bytes at a time: a byte-by-byte loop was a fifth of the check's
	// time on notebooks.
	starts := make([]int, 1, bytes.Count(data, []byte{'\n'})+1)
	for off := 0; ; {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return starts
		}
		off += i + 1
		starts = append(starts, off)
	}
}
