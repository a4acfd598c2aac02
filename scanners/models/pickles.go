package models

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/models/pickle"
)

type pickleMode int

const (
	// pickleRaw: one pickle; more streams after it are trailing data.
	pickleRaw pickleMode = iota
	// pickleTorchLegacy: PyTorch's legacy format, five pickles (magic,
	// protocol version, system info, the object, storage keys) then raw
	// storage bytes.
	pickleTorchLegacy
	// pickleNpy: the pickle after an .npy header (object arrays).
	pickleNpy
)

// maxNested is how many pickles nested in bytes constants one file may hold
// (an old checkpoint saved through torch.storage._load_from_bytes has one per
// storage).
const maxNested = 100_000

// rawKeep is how much of a pickle stream is kept for the byte scan that
// backs up a walk that failed.
const rawKeep = 4 << 20

type capBuffer struct {
	bytes.Buffer
	max int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		if len(p) > room {
			c.Buffer.Write(p[:room])
		} else {
			c.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// pickle walks the pickle stream(s) in r and reports what they import.
func (sc *scan) pickle(p place, r io.Reader, mode pickleMode, _ io.ReaderAt) *pickle.Result {
	raw := &capBuffer{max: rawKeep}
	lim := pickle.Limits{}
	if mode == pickleTorchLegacy {
		lim.MaxStreams = 5
	}
	nested := func(off int64, data string) {
		// Pickles inside pickles (torch.storage._load_from_bytes, a
		// pickle.loads payload) are walked as they are found: at most 8 deep
		// and maxNested in one file.
		if len(p) > 8 || sc.nested >= maxNested {
			sc.limit("nested pickle limit", p, fmt.Sprintf("Pickles nested in bytes constants%s deeper than 8, or more than %d in one file, were not walked.", p.in(), maxNested))
			return
		}
		sc.nested++
		sc.inPayload++
		sc.pickle(p.child(fmt.Sprintf("(pickle in a bytes constant at offset %d)", off)), strings.NewReader(data), pickleRaw, nil)
		sc.inPayload--
	}
	strs := func(ss []pickle.String) { sc.pickleStrings(p, ss) }
	if sc.s.strings == nil {
		strs = nil
	}
	constant := func(off int64, kind pickle.Kind, data string) { sc.nestedConstant(p, off, kind, data) }
	call := func(w *pickle.Walker, g int, args *pickle.Value, _ int64) { sc.codeCall(p, w, g, args) }
	w := pickle.NewWalker(io.TeeReader(r, raw), lim, pickle.Hooks{AfterBuild: joblibArray, Nested: nested, Strings: strs, Constant: constant, Call: call})
	res := w.Run()
	sc.reportPickle(p, res, raw.Bytes(), mode)
	return res
}

// joblibArray skips the array bytes joblib writes inline after a
// NumpyArrayWrapper (joblib/numpy_pickle.py write_array/read_array), so that
// the walk goes on with the rest of the pickle: a scanner that stops at the
// first array misses a payload placed after it. Object arrays are written as
// a nested pickle, which is walked.
func joblibArray(w *pickle.Walker, g int, args, state *pickle.Value) string {
	gl := w.Result().Globals[g]
	if gl.Name != "NumpyArrayWrapper" || !strings.HasSuffix(gl.Module, "numpy_pickle") {
		return ""
	}
	if state == nil || state.Kind != pickle.KDict {
		return "joblib NumpyArrayWrapper without a state dict: the inline array cannot be skipped"
	}
	dt := state.Get("dtype")
	shape := state.Get("shape")
	if dt == nil || shape == nil || shape.Kind != pickle.KTuple {
		return "joblib NumpyArrayWrapper without dtype or shape: the inline array cannot be skipped"
	}
	itemsize, object, ok := dtypeSize(dt)
	if !ok {
		return "joblib NumpyArrayWrapper with a dtype that cannot be sized: the inline array cannot be skipped"
	}
	if object {
		if !w.RunStream() {
			return "joblib object array: the nested pickle is broken"
		}
		return ""
	}
	count := int64(1)
	for _, d := range shape.Items {
		if d.Kind != pickle.KInt || d.Int < 0 {
			return "joblib NumpyArrayWrapper with a bad shape"
		}
		if d.Int != 0 && count > (1<<62)/d.Int {
			return "joblib NumpyArrayWrapper shape overflows"
		}
		count *= d.Int
	}
	// joblib ≥ 1.2 aligns the array: one byte says how many padding bytes
	// follow. It does so when the wrapper's state holds an alignment (older
	// files, joblib 0.10 to 1.1, have allow_mmap but no padding).
	if al := state.Get("numpy_array_alignment_bytes"); al != nil && al.Kind == pickle.KInt {
		pad, err := w.ReadByte()
		if err != nil || !w.Skip(int64(pad)) {
			return "joblib inline array: truncated padding"
		}
	}
	if count > 0 && itemsize > (1<<62)/count {
		return "joblib inline array size overflows"
	}
	if !w.Skip(count * itemsize) {
		return fmt.Sprintf("joblib inline array of %d bytes is truncated", count*itemsize)
	}
	return ""
}

// dtypeSize reads the item size of a pickled numpy.dtype: dtype(str, ...)
// with a BUILD state (version, byteorder, subarray, names, fields, elsize,
// alignment, flags); elsize is set for flexible and structured types.
func dtypeSize(dt *pickle.Value) (size int64, object, ok bool) {
	if dt.Kind != pickle.KObject || dt.Args == nil || len(dt.Args.Items) == 0 || dt.Args.Items[0].Kind != pickle.KStr {
		return 0, false, false
	}
	code := dt.Args.Items[0].Str
	if strings.HasPrefix(code, "O") {
		return 8, true, true
	}
	if st := dt.State; st != nil && st.Kind == pickle.KTuple && len(st.Items) >= 8 {
		if fl := st.Items[7]; fl.Kind == pickle.KInt && fl.Int&1 != 0 {
			return 0, true, true // NPY_ITEM_REFCOUNT: holds objects
		}
		if el := st.Items[5]; el.Kind == pickle.KInt && el.Int > 0 {
			return el.Int, false, true
		}
	}
	digits := strings.TrimLeft(code, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ<>|=")
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false, false
		}
		n = n*10 + int64(c-'0')
	}
	if n <= 0 {
		return 0, false, false
	}
	if strings.HasPrefix(code, "U") {
		return n * 4, false, true
	}
	return n, false, true
}

// reportPickle turns a walk's result into findings.
func (sc *scan) reportPickle(p place, res *pickle.Result, raw []byte, mode pickleMode) {
	type group struct {
		module, name string
		v            verdict
		offsets      []int64
		called       bool
		ops          map[string]bool
		dynamic      bool
	}
	groups := map[string]*group{}
	var order []string
	for _, g := range res.Globals {
		key := g.Module + "\x00" + g.Name + "\x00" + fmt.Sprint(g.Dynamic)
		gr := groups[key]
		if gr == nil {
			gr = &group{module: g.Module, name: g.Name, ops: map[string]bool{}, dynamic: g.Dynamic}
			if !g.Dynamic {
				gr.v = sc.s.cls.classify(g.Module, g.Name)
			}
			groups[key] = gr
			order = append(order, key)
		}
		if len(gr.offsets) < 5 {
			gr.offsets = append(gr.offsets, g.Offset)
		}
		gr.ops[g.Op] = true
		if len(g.Calls) > 0 {
			gr.called = true
		}
	}
	offs := func(o []int64) string {
		s := make([]string, len(o))
		for i, x := range o {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ", ")
	}
	opsOf := func(m map[string]bool) string {
		var s []string
		for k := range m {
			s = append(s, k)
		}
		sort.Strings(s)
		return strings.Join(s, "/")
	}
	kind := "pickle"
	if mode == pickleTorchLegacy {
		kind = "PyTorch legacy checkpoint pickle"
	}
	dangerousGroup := false
	for _, key := range order {
		gr := groups[key]
		if gr.dynamic || gr.v.tier == tierDangerous {
			dangerousGroup = true
		}
		qual := gr.module + "." + gr.name
		callNote := ""
		if gr.called {
			callNote = " and calls it"
		}
		ev := fmt.Sprintf("%s (%s) at %s", qual, opsOf(gr.ops), p.at(gr.offsets[0]))
		switch {
		case gr.dynamic && strings.HasPrefix(gr.module, "copyreg extension"):
			sc.add(ruleExtension, ruleExtension.Severity,
				fmt.Sprintf("The %s%s imports a global through extension code %s (%s at byte offset %s)%s: the global it names is decided by copyreg's registry at load time, not by the file. %s", kind, p.in(), gr.name, opsOf(gr.ops), offs(gr.offsets), callNote, ruleExtension.Fix), ev)
		case gr.dynamic:
			sc.add(ruleDynamic, ruleDynamic.Severity,
				fmt.Sprintf("The %s%s imports a global whose module (%s) and name (%s) are computed, not string constants (STACK_GLOBAL at byte offset %s)%s: this hides which code runs on load. %s", kind, p.in(), gr.module, gr.name, offs(gr.offsets), callNote, ruleDynamic.Fix),
				fmt.Sprintf("STACK_GLOBAL(%s, %s) at %s", gr.module, gr.name, p.at(gr.offsets[0])))
		case gr.v.tier == tierDangerous:
			sc.add(ruleDangerous, gr.v.sev,
				fmt.Sprintf("The %s%s imports %s%s (%s at byte offset %s): %s. Loading it with torch.load, joblib.load or pickle.load runs it. %s", kind, p.in(), qual, callNote, opsOf(gr.ops), offs(gr.offsets), gr.v.why, ruleDangerous.Fix), ev)
		case gr.v.tier == tierUnknown && gr.called && sc.inPayload > 0:
			// No pickler writes a pickle that calls code into a string of
			// another: whatever unpickles that string runs the call, so
			// the nesting is the sign (ModelAudit's nested-pickle cases).
			sc.add(ruleUnknown, scanners.SeverityHigh,
				fmt.Sprintf("The %s%s imports %s and calls it (%s at byte offset %s), hidden in a constant of the file: no pickler puts a pickle that calls code inside a string, and whatever unpickles that string runs the call. %s", kind, p.in(), qual, opsOf(gr.ops), offs(gr.offsets), ruleUnknown.Fix), ev)
		case gr.v.tier == tierUnknown:
			sc.add(ruleUnknown, ruleUnknown.Severity,
				fmt.Sprintf("The %s%s imports %s%s (%s at byte offset %s), which is neither a known-safe global nor in the trusted library tier; it is imported and may run code on load. %s", kind, p.in(), qual, callNote, opsOf(gr.ops), offs(gr.offsets), ruleUnknown.Fix), ev)
		}
	}

	var malformed []pickle.Problem
	var trailing *pickle.Problem
	for i, pr := range res.Problems {
		switch {
		case pr.Kind == pickle.Trailing:
			if mode == pickleRaw || mode == pickleNpy {
				trailing = &res.Problems[i]
			}
		default:
			malformed = append(malformed, pr)
		}
	}
	if mode == pickleTorchLegacy && res.Streams < 5 {
		malformed = append(malformed, pickle.Problem{Kind: pickle.Malformed, Offset: res.End, Msg: fmt.Sprintf("PyTorch legacy checkpoint holds %d pickles, 5 expected", res.Streams)})
	}
	if trailing != nil {
		sc.add(ruleTrailing, ruleTrailing.Severity,
			fmt.Sprintf("The %s%s has data after its STOP opcode at byte offset %d (%d pickle streams in all): pickle.load stops at the first STOP, other loaders read on, and scanners that stop there miss what follows. Everything after it was analysed too. %s", kind, p.in(), trailing.Offset, res.Streams, ruleTrailing.Fix),
			fmt.Sprintf("%d streams, second at %s", res.Streams, p.at(trailing.Offset)))
	}
	if len(malformed) > 0 {
		before := len(sc.out)
		sc.byteScan(p, raw, groups2set(res))
		scanHit := len(sc.out) > before
		random := len(res.Globals) == 0 && res.Ops < 8 && mode == pickleRaw && res.Streams == 1 && !scanHit
		odd := true // only problems CPython's unpickler accepts
		for _, m := range malformed {
			if m.Kind != pickle.Malformed {
				random = false
			}
			if m.Kind != pickle.Frame && m.Kind != pickle.Protocol {
				odd = false
			}
		}
		// Random bytes that merely start like a pickle (a few opcodes, no
		// imports, nothing found by the byte scan) are not reported, so that
		// binary files do not raise alarms.
		if !random {
			first := malformed[0]
			more := ""
			if len(malformed) > 1 {
				more = fmt.Sprintf(" (and %d more problems)", len(malformed)-1)
			}
			switch {
			case odd && !scanHit && !dangerousGroup:
				// Odd but valid: CPython loads it, and it carries nothing
				// dangerous by itself.
				sc.add(ruleMalformed, scanners.SeverityMedium,
					fmt.Sprintf("The %s%s is valid but odd: %s%s. CPython's unpickler accepts this and no pickler writes it; on its own it runs nothing (every import in the stream was checked and none is dangerous), but readers that handle frames and protocol markers differently from CPython (pickletools, the Python unpickler, scanners built on them) see a different stream, which is how payloads are hidden. Re-export the file with the library that wrote it.", kind, p.in(), first.Msg, more),
					"odd: "+first.Msg+p.in())
			default:
				sc.add(ruleMalformed, ruleMalformed.Severity,
					fmt.Sprintf("The %s%s is malformed: %s%s. The unpickler runs every opcode before the error, and scanners that give up there miss the payload; the whole stream was analysed as far as it could be read, and its bytes searched for imports. %s", kind, p.in(), first.Msg, more, ruleMalformed.Fix),
					first.Msg+p.in())
			}
		}
	}
	sc.pickleStrings(p, res.Strings)
}

// pickleStrings hands a pickle's string constants to the strings scanner,
// one a line; a string the pickle sets under dict keys is written as an
// assignment to its key path (wandb.api_key = "…" for {'wandb':
// {'api_key': …}}), so that rules which need a name next to the value
// (a W&B key is 40 hex digits) read it as they read a config file.
func (sc *scan) pickleStrings(p place, ss []pickle.String) {
	if len(ss) == 0 || sc.s.strings == nil {
		return
	}
	var buf bytes.Buffer
	for _, s := range ss {
		if s.Key != "" {
			buf.WriteString(s.Key)
			buf.WriteString(` = "`)
			buf.WriteString(s.Value)
			buf.WriteString("\"\n")
			continue
		}
		buf.WriteString(s.Value)
		buf.WriteByte('\n')
	}
	sc.strings(p, "string constant in a pickle", buf.Bytes())
}

func groups2set(res *pickle.Result) map[string]bool {
	m := map[string]bool{}
	for _, g := range res.Globals {
		m[g.Module+"."+g.Name] = true
	}
	return m
}

// Imports as GLOBAL/INST lines ("cos\nsystem\n") and as pairs of short
// strings followed by STACK_GLOBAL-like layouts ("\x8c\x05posix\x94\x8c\x06system").
var reGlobalLine = lazyregexp.New(`[ci]([A-Za-z_][A-Za-z0-9_.]{0,127})\n([A-Za-z_][A-Za-z0-9_.]{0,127})\n`)

// byteScan searches the raw bytes of a malformed pickle for imports the walk
// could not reach (a payload after a frame violation or an unknown opcode).
// It reports only dangerous ones, to stay quiet on random bytes.
func (sc *scan) byteScan(p place, raw []byte, known map[string]bool) {
	seen := map[string]bool{}
	report := func(off int, module, name string) {
		q := module + "." + name
		if known[q] || seen[q] {
			return
		}
		seen[q] = true
		v := sc.s.cls.classify(module, name)
		if v.tier != tierDangerous {
			return
		}
		sc.add(ruleDangerous, v.sev,
			fmt.Sprintf("The bytes of the malformed pickle%s name %s (found by a byte scan at offset %d, not reachable by a normal walk): %s. A loader that reads the stream differently (frame handling, error recovery) may import it. %s", p.in(), q, off, v.why, ruleDangerous.Fix),
			fmt.Sprintf("%s by byte scan at %s", q, p.at(int64(off))))
	}
	for _, m := range reGlobalLine.FindAllSubmatchIndex(raw, 256) {
		report(m[0], string(raw[m[2]:m[3]]), string(raw[m[4]:m[5]]))
	}
	hits := 0
	for i := 0; i+2 < len(raw) && hits < 256; i++ {
		if raw[i] != 0x8c {
			continue
		}
		mod, j, ok := shortIdent(raw, i)
		if !ok {
			continue
		}
		switch {
		case j < len(raw) && raw[j] == 0x94:
			j++
		case j+1 < len(raw) && raw[j] == 'q':
			j += 2
		case j+4 < len(raw) && raw[j] == 'r':
			j += 5
		}
		if name, _, ok := shortIdent(raw, j); ok {
			hits++
			report(i, mod, name)
		}
	}
}

// shortIdent reads a SHORT_BINUNICODE identifier at raw[i].
func shortIdent(raw []byte, i int) (string, int, bool) {
	if i+1 >= len(raw) || raw[i] != 0x8c {
		return "", 0, false
	}
	n := int(raw[i+1])
	if n == 0 || i+2+n > len(raw) {
		return "", 0, false
	}
	s := raw[i+2 : i+2+n]
	for k, c := range s {
		if !(c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || k > 0 && c >= '0' && c <= '9') {
			return "", 0, false
		}
	}
	return string(s), i + 2 + n, true
}
