package pins

import (
	"fmt"
	"strings"
	"sync"
)

// A small Python tokenizer: enough to find calls and their keyword
// arguments with line numbers. Written by hand because no maintained Go
// library parses Python 3 source; it never evaluates anything.

type pyTokKind uint8

const (
	pyName pyTokKind = iota
	pyStr
	pyNumber
	pyOp
	pyNewline // end of a logical line
)

type pyTok struct {
	val  string // a string's content (dyn when it is an f-string with fields)
	line int32
	kind pyTokKind
	dyn  bool
}

// pyToks recycles token slices from one file to the next: a fresh one per
// file was a fifth of the tokenizer's time (zeroed, then grown under the
// garbage collector's write barrier). Slices past pyToksKept tokens are not
// kept.
var pyToks sync.Pool

const pyToksKept = 1 << 16

// maxPyTokens bounds the tokens read from one file (about 40 MiB).
const maxPyTokens = 1 << 20

func pyTokenize(src []byte) []pyTok {
	toks, _ := pyTokenizeInto(nil, src)
	return toks
}

// pyTokenizeInto is pyTokenize appending to toks[:0]; trc reports whether a
// name token is trust_remote_code.
func pyTokenizeInto(toks []pyTok, src []byte) (_ []pyTok, trc bool) {
	if want := min(len(src)/8, maxPyTokens) + 8; cap(toks) < want {
		// Python averages a token per 5 to 8 bytes: fewer regrowths.
		toks = make([]pyTok, 0, want)
	}
	toks = toks[:0]
	var line int32 = 1
	depth := 0
	s := string(src)
	i := 0
	for i < len(s) && len(toks) < maxPyTokens {
		c := s[i]
		switch {
		case c == '\n':
			if depth == 0 && len(toks) > 0 && toks[len(toks)-1].kind != pyNewline {
				toks = append(toks, pyTok{kind: pyNewline, line: line})
			}
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			for i++; i < len(s) && (s[i] == ' ' || s[i] == '\t'); i++ {
			}
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			line++
			i += 2
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case pyClass[c]&pyIdentStart != 0:
			j := i + 1
			for j < len(s) && pyClass[s[j]]&pyIdentPart != 0 {
				j++
			}
			word := s[i:j]
			if j < len(s) && (s[j] == '"' || s[j] == '\'') && len(word) <= 2 && strings.Trim(strings.ToLower(word), "rbuf") == "" {
				tok, n, nl := pyString(s[j:], strings.ToLower(word))
				tok.line = line
				toks = append(toks, tok)
				line += int32(nl)
				i = j + n
				continue
			}
			trc = trc || len(word) == len("trust_remote_code") && word == "trust_remote_code"
			toks = append(toks, pyTok{kind: pyName, val: word, line: line})
			i = j
		case c == '"' || c == '\'':
			tok, n, nl := pyString(s[i:], "")
			tok.line = line
			toks = append(toks, tok)
			line += int32(nl)
			i += n
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (pyClass[s[j]]&pyIdentPart != 0 || s[j] == '.') {
				j++
			}
			toks = append(toks, pyTok{kind: pyNumber, val: s[i:j], line: line})
			i = j
		default:
			op := s[i : i+1]
			if i+1 < len(s) && pyOp2(c, s[i+1]) {
				op = s[i : i+2]
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			case ";":
				if depth == 0 {
					toks = append(toks, pyTok{kind: pyNewline, line: line})
					i++
					continue
				}
			}
			toks = append(toks, pyTok{kind: pyOp, val: op, line: line})
			i += len(op)
		}
	}
	return toks, trc
}

// pyOp2 reports whether a then b is a two-character operator: ==, !=, <=,
// >=, :=, the augmented assignments, **, //, ->, << or >>.
func pyOp2(a, b byte) bool {
	switch b {
	case '=':
		return strings.IndexByte("=!<>:+-*/%&|^@", a) >= 0
	case '*', '/', '<':
		return a == b
	case '>':
		return a == '-' || a == '>'
	}
	return false
}

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

// pyClass holds, for each byte, whether it starts an identifier and
// whether it goes on one: one look-up per byte in the tokenizer's loops.
var pyClass = func() (t [256]uint8) {
	for c := range t {
		if isIdentStart(byte(c)) {
			t[c] |= pyIdentStart | pyIdentPart
		}
		if '0' <= c && c <= '9' {
			t[c] |= pyIdentPart
		}
	}
	return t
}()

const (
	pyIdentStart = 1 << iota
	pyIdentPart
)

// pyString reads a string literal at the start of s with the given prefix
// already consumed; it returns the token, the bytes used and the newlines
// inside.
func pyString(s, prefix string) (pyTok, int, int) {
	q := pyQuote(s)
	dyn := strings.Contains(prefix, "f")
	// Most literals hold no backslash: their value is a piece of s.
	if end, nl, ok := pyPlainString(s, q); ok {
		v := s[len(q) : end-len(q)]
		if end > len(s) { // unterminated at the end of the file
			v = s[len(q):]
			end = len(s)
		}
		return pyTok{kind: pyStr, val: v, dyn: dyn && strings.Contains(v, "{")}, end, nl
	}
	return pyStringDecode(s, prefix)
}

// pyStringDecode is pyString reading the literal byte by byte, its escapes
// decoded (the oracle of pyString's fast path in the tests).
func pyStringDecode(s, prefix string) (pyTok, int, int) {
	q := pyQuote(s)
	raw := strings.Contains(prefix, "r")
	dyn := strings.Contains(prefix, "f")
	var b strings.Builder
	i := len(q)
	nl := 0
	for i < len(s) {
		if strings.HasPrefix(s[i:], q) {
			i += len(q)
			break
		}
		c := s[i]
		if c == '\n' {
			nl++
			if len(q) == 1 {
				i++
				break // unterminated
			}
		}
		if c == '\\' && i+1 < len(s) {
			if s[i+1] == '\n' {
				nl++
			}
			if raw {
				b.WriteByte(c)
			}
			b.WriteByte(s[i+1])
			i += 2
			continue
		}
		b.WriteByte(c)
		i++
	}
	v := b.String()
	return pyTok{kind: pyStr, val: v, dyn: dyn && strings.Contains(v, "{")}, i, nl
}

// pyQuote is the quote that opens the literal at the start of s: its first
// byte, or three of it.
func pyQuote(s string) string {
	if len(s) >= 3 && s[1] == s[0] && s[2] == s[0] {
		return s[:3]
	}
	return s[:1]
}

// pyPlainString reads the literal at the start of s, quoted by q, when no
// backslash comes before its end: it returns the offset past the closing
// quote (len(s)+len(q) when the file ends first) and the newlines inside.
// ok is false when there is a backslash (pyString then decodes it), or when
// a one-quote literal stops unterminated at a newline (pyString's own loop
// gives that case its value).
func pyPlainString(s, q string) (end, nl int, ok bool) {
	i := len(q)
	for {
		k := strings.IndexAny(s[i:], q[:1]+"\\\n")
		if k < 0 {
			if len(q) == 3 {
				nl += strings.Count(s[i:], "\n")
			}
			return len(s) + len(q), nl, true
		}
		i += k
		switch s[i] {
		case '\\':
			return 0, 0, false
		case '\n':
			if len(q) == 1 {
				return 0, 0, false
			}
			nl++
			i++
		default:
			if strings.HasPrefix(s[i:], q) {
				return i + len(q), nl, true
			}
			i++
		}
	}
}

// pyValue is an argument's value as far as the check can tell.
type pyValue struct {
	str             string
	isStr           bool // a string literal, or a name bound to one
	name            string
	isTrue, isFalse bool
	line            int
	list            []string // a list or tuple of string literals
	isList          bool
}

type pyCall struct {
	callee string // dotted name
	line   int
	pos    []pyValue
	kw     map[string]pyValue
	starKW bool // **kwargs: keywords we cannot see
}

// at is the line a finding about argument v is reported at — v's own,
// in a call written over several lines — and, when that is not the
// call's line, the words that name the call's line for the message.
func (c pyCall) at(v pyValue) (int, string) {
	if v.line <= 0 || v.line == c.line {
		return c.line, ""
	}
	return v.line, fmt.Sprintf(" (in the call that starts at line %d)", c.line)
}

// pyCalls finds every call of a dotted name that want takes, and its
// arguments.
func pyCalls(toks []pyTok, want func(callee string) bool) []pyCall {
	vars := map[string]string{}
	// NAME = "string" at the start of a logical line.
	for i := 0; i+3 < len(toks); i++ {
		if (i == 0 || toks[i-1].kind == pyNewline) && toks[i].kind == pyName && toks[i+1].kind == pyOp && toks[i+1].val == "=" &&
			toks[i+2].kind == pyStr && !toks[i+2].dyn && (toks[i+3].kind == pyNewline) {
			vars[toks[i].val] = toks[i+2].val
		}
	}
	var calls []pyCall
	for i := 1; i < len(toks); i++ {
		if toks[i].kind != pyOp || toks[i].val != "(" || toks[i-1].kind != pyName {
			continue
		}
		j := i - 1
		for j >= 2 && toks[j-1].kind == pyOp && toks[j-1].val == "." && toks[j-2].kind == pyName {
			j -= 2
		}
		if j > 0 && toks[j-1].kind == pyName && (toks[j-1].val == "def" || toks[j-1].val == "class") {
			continue
		}
		callee := toks[j].val
		if j+1 < i {
			var name strings.Builder
			for k := j; k < i; k++ {
				name.WriteString(toks[k].val)
			}
			callee = name.String()
		}
		if !want(callee) {
			continue
		}
		c := pyCall{callee: callee, line: int(toks[i-1].line), kw: map[string]pyValue{}}
		// Split the arguments at top-level commas.
		depth, start := 0, i+1
		k := i + 1
		for ; k < len(toks); k++ {
			t := toks[k]
			if t.kind != pyOp {
				continue
			}
			switch t.val {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth == 0 {
					c.addArg(toks[start:k], vars)
					k = len(toks) + 1
				} else {
					depth--
				}
			case ",":
				if depth == 0 {
					c.addArg(toks[start:k], vars)
					start = k + 1
				}
			}
			if k > len(toks) {
				break
			}
		}
		calls = append(calls, c)
	}
	return calls
}

func (c *pyCall) addArg(ts []pyTok, vars map[string]string) {
	if len(ts) == 0 {
		return
	}
	if ts[0].kind == pyOp && ts[0].val == "**" {
		c.starKW = true
		return
	}
	if len(ts) >= 2 && ts[0].kind == pyName && ts[1].kind == pyOp && ts[1].val == "=" {
		c.kw[ts[0].val] = pyVal(ts[2:], vars)
		return
	}
	c.pos = append(c.pos, pyVal(ts, vars))
}

func pyVal(ts []pyTok, vars map[string]string) pyValue {
	if len(ts) == 0 {
		return pyValue{}
	}
	v := pyValue{line: int(ts[0].line)}
	allStr := true
	var b strings.Builder
	for _, t := range ts {
		if t.kind != pyStr || t.dyn {
			allStr = false
			break
		}
		b.WriteString(t.val)
	}
	if l, ok := pyStrList(ts); ok {
		v.list, v.isList = l, true
	}
	switch {
	case allStr:
		v.str, v.isStr = b.String(), true
	case len(ts) == 1 && ts[0].kind == pyName:
		v.name = ts[0].val
		switch ts[0].val {
		case "True":
			v.isTrue = true
		case "False", "None":
			v.isFalse = true
		default:
			if s, ok := vars[ts[0].val]; ok {
				v.str, v.isStr = s, true
			}
		}
	}
	return v
}

// pyStrList reads ["a", "b"] or ("a", "b").
func pyStrList(ts []pyTok) ([]string, bool) {
	if len(ts) < 2 || ts[0].kind != pyOp || ts[len(ts)-1].kind != pyOp ||
		!(ts[0].val == "[" && ts[len(ts)-1].val == "]" || ts[0].val == "(" && ts[len(ts)-1].val == ")") {
		return nil, false
	}
	var out []string
	for i, t := range ts[1 : len(ts)-1] {
		switch {
		case i%2 == 0 && t.kind == pyStr && !t.dyn:
			out = append(out, t.val)
		case i%2 == 1 && t.kind == pyOp && t.val == ",":
		default:
			return nil, false
		}
	}
	return out, true
}

func (c *pyCall) arg(i int, kw string) (pyValue, bool) {
	if v, ok := c.kw[kw]; ok {
		return v, true
	}
	if i >= 0 && i < len(c.pos) {
		return c.pos[i], true
	}
	return pyValue{}, false
}

// calleeIs reports whether the dotted callee is name or ends in .name.
func calleeIs(callee, name string) bool {
	// Not HasSuffix(callee, "."+name): that concatenation, once per call
	// of every Python file, was a tenth of the pins check's time.
	n := len(callee) - len(name)
	return n == 0 && callee == name || n > 0 && callee[n-1] == '.' && callee[n:] == name
}

// hubID reports whether s names a Hub repository ("org/name" or "name")
// rather than a local path.
func hubID(s string) bool {
	if s == "" || strings.ContainsAny(s[:1], "./~\\$") || strings.ContainsAny(s, " \\:") || strings.Count(s, "/") > 1 {
		return false
	}
	return true
}

// datasetBuilders are load_dataset names that read local or given files.
var datasetBuilders = map[string]bool{
	"csv": true, "json": true, "parquet": true, "text": true, "imagefolder": true, "audiofolder": true,
	"videofolder": true, "arrow": true, "pandas": true, "webdataset": true, "sql": true, "xml": true, "generator": true,
}

// scanPython checks Hugging Face and torch loading calls, and the shell
// commands a script runs through os.system and subprocess.
func scanPython(data []byte, r *rep) {
	st := newShellState()
	defer st.finish()
	scanPythonCalls(data, r, st)
}

func scanPythonCalls(data []byte, r *rep, st *shellState) { checkPythonCalls(data, r, st, false) }

// checkPythonCalls is scanPythonCalls; every reads every call whole, as it
// once did (the oracle of the filter's tests).
func checkPythonCalls(data []byte, r *rep, st *shellState, every bool) {
	tp, _ := pyToks.Get().(*[]pyTok)
	if tp == nil {
		tp = new([]pyTok)
	}
	toks, named := pyTokenizeInto(*tp, data)
	defer func() {
		// The tokens point into this file's text: let it go with them.
		clear(toks)
		if cap(toks) <= pyToksKept {
			*tp = toks[:0]
			pyToks.Put(tp)
		}
	}()
	if len(toks) >= maxPyTokens {
		r.add(ruleUnparsed, int(toks[len(toks)-1].line), "", fmt.Sprintf("only the first %d Python tokens (to this line) were checked for pins; the rest of this unusually large file was not", maxPyTokens))
	}
	// Only the calls checked below are read whole: any call when the
	// file has trust_remote_code, else those kindOfCall names.
	trc := every || named
	for _, c := range pyCalls(toks, func(callee string) bool { return trc || kindOfCall(callee) != pyCallOther }) {
		pyShell(c, r, st)
		if v, ok := c.kw["trust_remote_code"]; ok && v.isTrue {
			ln, in := c.at(v)
			r.add(ruleTrustRemoteCode, ln, c.callee+"(trust_remote_code=True)", fmt.Sprintf("%s(…, trust_remote_code=True) runs Python code from the model's hub repository with your credentials and GPUs; avoid it, or review that code and pin the same call to revision=\"<40-hex commit>\"", c.callee)+in)
		}
		switch kindOfCall(c.callee) {
		case pyCallFromPretrained:
			if v, ok := c.arg(0, "pretrained_model_name_or_path"); ok {
				hubRevision(r, c, v, "model")
			}
		case pyCallPipeline:
			v, ok := c.arg(1, "model")
			if !ok && !c.starKW && len(c.pos)+len(c.kw) > 0 {
				task, _ := c.arg(0, "task")
				if task.isStr {
					r.add(ruleHFRevision, c.line, "pipeline("+task.str+")", fmt.Sprintf("pipeline(%q) has no model=, so it downloads the task's default model from its main branch, which can change; name the model and pin it: pipeline(%q, model=\"org/name\", revision=\"<40-hex commit>\")", task.str, task.str))
				}
				continue
			}
			hubRevision(r, c, v, "model")
		case pyCallHubDownload:
			if v, ok := c.arg(0, "repo_id"); ok {
				hubRevision(r, c, v, "repository")
			}
		case pyCallLoadDataset:
			if v, ok := c.arg(0, "path"); ok && !datasetBuilders[v.str] {
				hubRevision(r, c, v, "dataset")
			}
		case pyCallTorchHub:
			torchHub(r, c)
		case pyCallTorchLoad:
			if c.starKW {
				continue
			}
			if v, ok := c.kw["weights_only"]; !ok || !v.isTrue {
				r.add(ruleTorchLoadUnsafe, c.line, "torch.load", "torch.load(…) without weights_only=True unpickles the file, so a crafted checkpoint runs code when loaded (torch before 2.6 defaults to the unsafe mode); pass weights_only=True, or save weights as safetensors and load them with safetensors.torch.load_file")
			}
		case pyCallURLDownload:
			kw := "check_hash"
			if calleeIs(c.callee, "download_url_to_file") {
				kw = "hash_prefix"
			}
			if v, ok := c.arg(-1, kw); !c.starKW && (!ok || v.isFalse) {
				u, _ := c.arg(0, "url")
				r.add(ruleDownloadNoChecksum, c.line, u.str, fmt.Sprintf("%s(…) downloads weights without %s, so a replaced file loads unnoticed; pass %s (the file name must carry the sha256 prefix), or download and verify the sha256 yourself", c.callee, kw, map[string]string{"check_hash": "check_hash=True", "hash_prefix": "hash_prefix=\"<sha256 prefix>\""}[kw]))
			}
		}
	}
}

// pyCallKind is what scanPythonCalls checks in a call, by its callee.
type pyCallKind int

const (
	pyCallOther pyCallKind = iota
	pyCallFromPretrained
	pyCallPipeline
	pyCallHubDownload
	pyCallLoadDataset
	pyCallTorchHub
	pyCallTorchLoad
	pyCallURLDownload
	pyCallShell // os.system, subprocess.* (pyShell)
)

// kindOfCall says which check a call of callee gets; pyCallOther: none
// (but trust_remote_code=, which any call may pass).
func kindOfCall(callee string) pyCallKind {
	switch {
	case calleeIs(callee, "from_pretrained"):
		return pyCallFromPretrained
	case callee == "pipeline" || callee == "transformers.pipeline":
		return pyCallPipeline
	case calleeIs(callee, "hf_hub_download") || calleeIs(callee, "snapshot_download"):
		return pyCallHubDownload
	case calleeIs(callee, "load_dataset"):
		return pyCallLoadDataset
	case callee == "torch.hub.load" || callee == "hub.load":
		return pyCallTorchHub
	case callee == "torch.load":
		return pyCallTorchLoad
	case calleeIs(callee, "load_state_dict_from_url") || calleeIs(callee, "download_url_to_file"):
		return pyCallURLDownload
	case shellCallees[callee]:
		return pyCallShell
	}
	return pyCallOther
}

// shellCallees are the calls pyShell reads a command from.
var shellCallees = map[string]bool{
	"os.system": true, "os.popen": true, "subprocess.run": true, "subprocess.call": true,
	"subprocess.check_call": true, "subprocess.check_output": true, "subprocess.Popen": true,
}

// hubRevision reports a Hub download of repo v without a commit revision.
func hubRevision(r *rep, c pyCall, v pyValue, what string) {
	if !v.isStr || !hubID(v.str) || c.starKW {
		return // a variable or a local path: cannot tell
	}
	if lf, ok := c.kw["local_files_only"]; ok && lf.isTrue {
		return
	}
	rev, ok := c.kw["revision"]
	switch {
	case !ok:
		r.add(ruleHFRevision, c.line, v.str, fmt.Sprintf("%s(%q) has no revision=, so it fetches the %s's main branch, which its owner (or whoever takes over the account) can change; pin the commit: revision=\"<40-hex commit>\"", c.callee, v.str, what))
	case rev.isStr && !isCommit(rev.str):
		ln, in := c.at(rev)
		r.add(ruleHFRevision, ln, v.str, fmt.Sprintf("%s(%q, revision=%q) names a branch or tag, which can move; pin the commit: revision=\"<40-hex commit>\"", c.callee, v.str, rev.str)+in)
	}
}

func torchHub(r *rep, c pyCall) {
	if src, ok := c.kw["source"]; ok && src.isStr && src.str == "local" {
		return
	}
	v, ok := c.arg(0, "repo_or_dir")
	if !ok || !v.isStr {
		return
	}
	repo, ref, hasRef := strings.Cut(v.str, ":")
	if hasRef && isCommit(ref) {
		return
	}
	what := "the default branch"
	if hasRef {
		what = fmt.Sprintf("ref %q, which can move", ref)
	}
	r.add(ruleTorchHubUnpinned, c.line, v.str, fmt.Sprintf("torch.hub.load(%q) downloads and runs hubconf.py from %s; pin the commit: torch.hub.load(\"%s:<40-hex commit>\", …, trust_repo=False)", v.str, what, repo))
}

// pyShell checks the commands run by os.system("…"), subprocess.*("…",
// shell=True) and subprocess.*(["pip", "install", …]).
func pyShell(c pyCall, r *rep, st *shellState) {
	if !shellCallees[c.callee] {
		return
	}
	sub := strings.HasPrefix(c.callee, "subprocess.")
	v, ok := c.arg(0, "args")
	if !ok {
		return
	}
	sc := &shellScan{st: st, r: r}
	switch {
	case v.isList && sub:
		argv := make([]arg, len(v.list))
		for i, s := range v.list {
			argv[i] = arg{s: s}
		}
		if len(argv) > 0 {
			sc.command(argv, c.line)
		}
	case v.isStr:
		sc.nested(v.str, v.line, "")
	}
}
