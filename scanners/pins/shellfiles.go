package pins

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/slurm"
)

// This file holds the files a script writes and the commands that read
// them later: cat > environment.yml <<EOF or printf … > requirements.txt
// followed by conda env create -f / pip install -r, and loops that install
// a file's lines (while read p; do pip install "$p"; done < FILE).

// writtenFile is a file whose content the script tells: its text and, for
// each line of it, the artifact's line the text was written on.
type writtenFile struct {
	text  string
	lines []int
}

// maxWritten bounds the text kept of one file a script writes, and
// maxWrittenTotal all the text one scan keeps (printf reuses its format
// for every argument, so a short line can write much).
const (
	maxWritten      = 1 << 20
	maxWrittenTotal = 4 << 20
)

// writeFile records that the script writes text to file (appends with
// add), line i of text being written at artifact line lines[i].
func (sc *shellScan) writeFile(file, text string, lines []int, add bool) {
	if file == "" || file == "/dev/null" || strings.HasPrefix(file, "/dev/") {
		return
	}
	if sc.st.written == nil {
		sc.st.written = map[string]*writtenFile{}
	}
	key := sc.resolve(file)
	w := sc.st.written[key]
	if w == nil || !add {
		w = &writtenFile{}
	}
	if len(w.text)+len(text) > maxWritten || sc.st.writtenBytes+len(text) > maxWrittenTotal {
		delete(sc.st.written, key)
		return
	}
	sc.st.writtenBytes += len(text)
	if w.text != "" && !strings.HasSuffix(w.text, "\n") {
		// Appended to an unfinished line: that line is written twice.
		w.lines = w.lines[:len(w.lines)-1]
	}
	w.text += text
	w.lines = append(w.lines, lines...)
	sc.st.written[key] = w
}

// forget records that the script writes file with content it does not
// tell (a download, a copy): a later reader gets neither what an earlier
// command wrote nor the file committed beside the script.
func (sc *shellScan) forget(file string) {
	if sc.st.written == nil || file == "" {
		return
	}
	delete(sc.st.written, sc.resolve(file))
}

// linesAt is one artifact line for each line of text, from first on.
func linesAt(text string, first int) []int {
	n := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		n++
	}
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// sameLine is one artifact line, ln, for each line of text.
func sameLine(text string, ln int) []int {
	out := linesAt(text, 0)
	for i := range out {
		out[i] = ln
	}
	return out
}

// heredocWrite records a here-document that cat or tee writes to a file
// (cat > f <<EOF, cat <<EOF >> f, tee f <<EOF).
func (sc *shellScan) heredocWrite(s *syntax.Stmt, rd *syntax.Redirect, args []arg) {
	args = unwrap(args)
	if len(args) == 0 {
		return
	}
	var files []string
	add := false
	switch prog(args[0]) {
	case "cat":
		if len(skipOpts(args[1:])) > 0 {
			return // cat FILE: not the heredoc
		}
	case "tee":
		for _, a := range args[1:] {
			switch {
			case a.s == "-a" || a.s == "--append":
				add = true
			case strings.HasPrefix(a.s, "-"):
			case a.dyn:
				return
			default:
				files = append(files, a.s)
			}
		}
	default:
		return
	}
	out, outAdd := sc.stdoutFile(s)
	body, ok := slurm.HeredocBody(sc.src, rd, sc.param)
	if !ok {
		return
	}
	lines := linesAt(body, 0)
	for i := range lines {
		lines[i] = sc.r.mapLine(line(rd.Hdoc.Pos()) + i)
	}
	for _, f := range files {
		sc.writeFile(f, body, lines, add)
	}
	if out != "" {
		sc.writeFile(out, body, lines, outAdd)
	}
}

// stdoutFile is the file a statement's standard output goes to, and
// whether it is appended to.
func (sc *shellScan) stdoutFile(s *syntax.Stmt) (string, bool) {
	file, add := "", false
	for _, rd := range s.Redirs {
		if (rd.Op != syntax.RdrOut && rd.Op != syntax.AppOut && rd.Op != syntax.RdrAll && rd.Op != syntax.AppAll && rd.Op != syntax.RdrClob) ||
			rd.Word == nil || rd.N != nil && rd.N.Value != "1" {
			continue
		}
		if w := sc.word(rd.Word); !w.dyn {
			file, add = w.s, rd.Op == syntax.AppOut || rd.Op == syntax.AppAll
		} else {
			file, add = "", false
		}
	}
	return file, add
}

// echoWrite records what echo or printf writes to a file (standard output
// redirected: echo torch >> requirements.txt); text with a part this
// script does not know makes the file unknown.
func (sc *shellScan) echoWrite(p string, args []arg, ln int) {
	file, ok := sc.st.outputs[sc.cur]
	if !ok {
		return
	}
	add := sc.st.appends[sc.cur]
	for _, a := range args {
		if a.dyn {
			sc.forget(file)
			return
		}
	}
	limit := min(maxWritten, maxWrittenTotal-sc.st.writtenBytes)
	var text string
	if p == "echo" {
		text = echoText(args)
	} else {
		if len(args) == 0 {
			return
		}
		text = printfText(args[0].s, args[1:], limit+1)
	}
	if len(text) > limit {
		// More than is kept: not known, and what was produced counts
		// against the scan's budget all the same.
		sc.st.writtenBytes += len(text)
		sc.forget(file)
		return
	}
	sc.writeFile(file, text, sameLine(text, sc.r.mapLine(ln)), add)
}

// echoText is what echo prints: its words joined by spaces and a newline;
// -n drops the newline and -e reads backslash escapes.
func echoText(args []arg) string {
	newline, escapes := true, false
	for len(args) > 0 && len(args[0].s) > 1 && args[0].s[0] == '-' && strings.Trim(args[0].s[1:], "neE") == "" {
		for _, c := range args[0].s[1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = a.s
	}
	s := strings.Join(words, " ")
	if escapes {
		s = backslashEscapes(s)
	}
	if newline {
		s += "\n"
	}
	return s
}

// printfText is what printf FORMAT ARGS... prints: the format's escapes
// read, %s, %b and %d taking the next argument, the format reused while
// arguments remain (as printf does).
//
// It stops once it has written limit bytes.
func printfText(format string, args []arg, limit int) string {
	var b strings.Builder
	for {
		used := 0
		for rest := format; rest != "" && b.Len() < limit; {
			k := strings.IndexAny(rest, `\%`)
			if k < 0 {
				b.WriteString(rest)
				break
			}
			b.WriteString(rest[:k])
			rest = rest[k:]
			if len(rest) == 1 {
				b.WriteString(rest)
				break
			}
			if rest[0] == '\\' {
				b.WriteString(backslashEscapes(rest[:2]))
				rest = rest[2:]
				continue
			}
			j := 1
			for j < len(rest) && strings.IndexByte("-+ #0123456789.", rest[j]) >= 0 {
				j++
			}
			if j == len(rest) {
				b.WriteString(rest)
				break
			}
			verb := rest[j]
			rest = rest[j+1:]
			if verb == '%' {
				b.WriteByte('%')
				continue
			}
			v := ""
			if used < len(args) {
				v = args[used].s
			}
			used++
			if verb == 'b' {
				v = backslashEscapes(v)
			}
			b.WriteString(v)
		}
		if used == 0 || used >= len(args) || b.Len() >= limit {
			return b.String()
		}
		args = args[used:]
	}
}

// escapes are the backslash escapes echo -e and printf read.
var escapes = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`, `\"`, `"`, `\'`, `'`)

// backslashEscapes reads \n, \t and \\ as echo -e and printf do.
func backslashEscapes(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return escapes.Replace(s)
}

// judgeWritten judges a file the script wrote before installing from it,
// at the lines where its text is written.
func (sc *shellScan) judgeWritten(file string, w *writtenFile, conda bool) {
	base := &rep{s: sc.r.s, where: strings.TrimSpace(sc.r.where + " " + fmt.Sprintf("in %s as this script writes it", file))}
	r := base.subMap(func(l int) int {
		if l >= 1 && l <= len(w.lines) {
			return w.lines[l-1]
		}
		if len(w.lines) > 0 {
			return w.lines[0]
		}
		return 0
	})
	if conda {
		scanConda([]byte(w.text), r)
		return
	}
	a := sc.r.s.a
	(&Scanner{}).requirements(sc.st.ctx, a, []byte(w.text), r, a.FS, path.Dir(a.Path), map[string]bool{}, 1)
}

// loopEntry is one line or word of a file a loop installs from.
type loopEntry struct {
	value string
	// line, when not 0, is the artifact line the script writes the entry
	// on; note says where it comes from.
	line int
	note string
}

// names reports whether a finding's evidence is the entry, or names it
// among other words ("curl, wget").
func (e *loopEntry) names(evidence string) bool {
	if evidence == e.value {
		return true
	}
	for _, f := range strings.Fields(evidence) {
		if strings.TrimRight(f, ",;") == e.value {
			return true
		}
	}
	return false
}

// maxLoopEntries bounds the entries of one file a loop is checked with,
// and maxLoopWalks the loop bodies one scan walks for entries (loops
// inside loops multiply).
const (
	maxLoopEntries = 512
	maxLoopWalks   = 4096
)

// fileLoop checks a loop over a file's lines or words — while read p; do
// … "$p" …; done < FILE, cat FILE | while read p, for p in $(cat FILE) —
// once for each entry, the loop variable set to it, when the file's text
// is known: written by the script, or on disk in the target. It reports
// whether it did (and the loop is not to be walked again).
func (sc *shellScan) fileLoop(s *syntax.Stmt) bool {
	var name, file string
	var body []*syntax.Stmt
	words := false
	switch c := s.Cmd.(type) {
	case *syntax.WhileClause:
		name, body = readLoop(c)
		file = sc.stdinFile(s)
	case *syntax.BinaryCmd:
		if c.Op != syntax.Pipe {
			return false
		}
		wc, ok := c.Y.Cmd.(*syntax.WhileClause)
		if !ok {
			return false
		}
		name, body = readLoop(wc)
		if x, ok := c.X.Cmd.(*syntax.CallExpr); ok && len(x.Args) == 2 && prog(sc.word(x.Args[0])) == "cat" {
			if a := sc.word(x.Args[1]); !a.dyn {
				file = a.s
			}
		}
	case *syntax.ForClause:
		it, ok := c.Loop.(*syntax.WordIter)
		if !ok || it.Name == nil || len(it.Items) != 1 {
			return false
		}
		name, body, words = it.Name.Value, c.Do, true
		file = sc.catFile(it.Items[0])
	}
	if name == "" || file == "" || len(body) == 0 || sc.st.loopWalks >= maxLoopWalks {
		return false
	}
	entries := sc.fileEntries(file, words)
	if entries == nil || sc.st.loopWalks+len(entries) > maxLoopWalks {
		return false // walked once, the variable unknown
	}
	sc.st.loopWalks += len(entries)
	prevR := sc.r
	prev, had := sc.st.env[name]
	defer func() {
		sc.r = prevR
		if had {
			sc.st.env[name] = prev
		} else {
			delete(sc.st.env, name)
		}
	}()
	for _, e := range entries {
		sc.st.env[name] = e.value
		sc.r = &rep{s: prevR.s, line: prevR.line, where: prevR.where, entry: &e}
		for _, st := range body {
			syntax.Walk(st, sc.visit)
		}
	}
	return true
}

// readLoop is the variable and body of "while read [-r] NAME; do …; done".
func readLoop(c *syntax.WhileClause) (string, []*syntax.Stmt) {
	if c.Until || len(c.Cond) != 1 {
		return "", nil
	}
	call, ok := c.Cond[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) < 2 || litOf(call.Args[0]) != "read" {
		return "", nil
	}
	var names []string
	for i := 1; i < len(call.Args); i++ {
		w := litOf(call.Args[i])
		switch {
		case w == "":
			return "", nil
		case w == "-r" || w == "-s" || w == "-e":
		case w == "-d" || w == "-p" || w == "-t" || w == "-u" || w == "-n" || w == "-N":
			i++
		case strings.HasPrefix(w, "-"):
			return "", nil // -a ARRAY and the like
		default:
			names = append(names, w)
		}
	}
	if len(names) != 1 {
		return "", nil
	}
	return names[0], c.Do
}

// litOf is a word that is one literal, or "".
func litOf(w *syntax.Word) string {
	if len(w.Parts) != 1 {
		return ""
	}
	if l, ok := w.Parts[0].(*syntax.Lit); ok {
		return l.Value
	}
	return ""
}

// stdinFile is the file a statement's standard input is redirected from.
func (sc *shellScan) stdinFile(s *syntax.Stmt) string {
	file := ""
	for _, rd := range s.Redirs {
		if rd.Op == syntax.RdrIn && rd.Word != nil && (rd.N == nil || rd.N.Value == "0") {
			if a := sc.word(rd.Word); !a.dyn {
				file = a.s
			}
		}
	}
	return file
}

// catFile is FILE when word w is "$(cat FILE)", "$(< FILE)" or `cat FILE`.
func (sc *shellScan) catFile(w *syntax.Word) string {
	if len(w.Parts) != 1 {
		return ""
	}
	var cs *syntax.CmdSubst
	switch p := w.Parts[0].(type) {
	case *syntax.CmdSubst:
		cs = p
	case *syntax.DblQuoted:
		return "" // one word: the whole file
	}
	if cs == nil || len(cs.Stmts) != 1 {
		return ""
	}
	st := cs.Stmts[0]
	if st.Cmd == nil {
		return sc.stdinFile(st) // $(< FILE)
	}
	if x, ok := st.Cmd.(*syntax.CallExpr); ok && len(x.Args) == 2 && prog(sc.word(x.Args[0])) == "cat" {
		if a := sc.word(x.Args[1]); !a.dyn {
			return a.s
		}
	}
	return ""
}

// fileEntries are the lines (or, for a for loop, the words) of file as a
// loop reads them, blank and comment lines left out: from what the
// script wrote to it, else from the target's file system. It returns nil
// when the text is not known.
func (sc *shellScan) fileEntries(file string, words bool) []loopEntry {
	var out []loopEntry
	add := func(v string, ln int, note string) bool {
		if len(out) >= maxLoopEntries {
			return false
		}
		out = append(out, loopEntry{value: v, line: ln, note: note})
		return true
	}
	split := func(text string, lineOf func(int) int, noteOf func(int) string) []loopEntry {
		out = []loopEntry{}
		for i, l := range strings.Split(text, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			vs := []string{l}
			if words {
				vs = strings.Fields(l)
			}
			for _, v := range vs {
				if !add(v, lineOf(i), noteOf(i)) {
					return out
				}
			}
		}
		return out
	}
	if w := sc.st.written[sc.resolve(file)]; w != nil {
		note := fmt.Sprintf("from %s as this script writes it", file)
		return split(w.text, func(i int) int {
			if i < len(w.lines) {
				return w.lines[i]
			}
			return 0
		}, func(int) string { return note })
	}
	a := sc.r.s.a
	if a.Kind == "" || a.TargetKind == scanners.KindImage || a.Kind == scanners.ArtifactImageConfig {
		return nil
	}
	p, ok := sc.findInTarget(file)
	if !ok {
		return nil
	}
	data, err := fs.ReadFile(a.FS, p)
	if err != nil || len(data) > maxInput {
		return nil
	}
	return split(string(data), func(int) int { return 0 }, func(i int) string { return fmt.Sprintf("from line %d of %s", i+1, p) })
}
