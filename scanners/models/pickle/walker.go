// Package pickle walks Python pickle streams (protocols 0 to 5) without
// executing them and reports every global they import, every call site and
// every string constant, plus what is wrong with the stream.
//
// Why a walker of our own and not github.com/nlpodyssey/gopickle's
// Unpickler: gopickle's unpickler is a real unpickler. It constructs the
// objects the stream describes (REDUCE calls the class it found, BUILD calls
// __setstate__), so analysing with it means modelling Python classes in Go,
// and it stops at the first error and at the first STOP. A scanner must never
// construct anything, must keep going after an error and after STOP (a
// payload placed before a deliberate error, or in a second stream, is exactly
// how nullifAI-style and stacked-pickle bypasses work), and must tie each call
// opcode to the callable it calls. gopickle is used where it serves: decoding
// the small, fixed header pickles of PyTorch's legacy format (see
// LegacyMagic in the models package).
//
// The walker keeps a symbolic stack, a mark stack and a memo, the way
// CPython's C unpickler does, so that operands of STACK_GLOBAL are resolved
// from the real stack (memo PUT/BINPUT/LONG_BINPUT/MEMOIZE/GET included) and
// not by looking back at the previous opcodes (the memo-desync bypass).
// Everything an input can inflate is bounded: memo size, stack depth, string
// length, line length, strings kept.
package pickle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// Limits bound what one walk may hold in memory.
type Limits struct {
	// MaxMemo is the most memo entries kept (default 1<<20, about 100 MiB at
	// most); entries past it are dropped and the walk goes on.
	MaxMemo int
	// MaxStack is the deepest the stack may grow (default 1<<20).
	MaxStack int
	// MaxString is the longest string or bytes constant kept whole; longer
	// ones are skipped past, their first bytes kept (default 1 MiB).
	MaxString int
	// MaxLine is the longest text argument of a protocol 0 opcode (default 64 KiB).
	MaxLine int
	// MaxStringsBytes bounds the total size of string constants collected in
	// Result.Strings (default 4 MiB).
	MaxStringsBytes int
	// MinStringLen is the shortest string collected in Result.Strings (default 8).
	MinStringLen int
	// MaxStreams is the most pickle streams walked one after the other; 0
	// means until the end of the input.
	MaxStreams int
	// MaxProblems bounds the problems recorded (default 64).
	MaxProblems int
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxMemo, 1<<20)
	def(&l.MaxStack, 1<<20)
	def(&l.MaxString, 1<<20)
	def(&l.MaxLine, 64<<10)
	def(&l.MaxStringsBytes, 4<<20)
	def(&l.MinStringLen, 8)
	def(&l.MaxProblems, 64)
	return l
}

// Global is one import the stream makes.
type Global struct {
	Module, Name string
	// Offset is the byte offset of the importing opcode.
	Offset int64
	// Op is the importing opcode: GLOBAL, STACK_GLOBAL, INST or EXT1/2/4.
	Op string
	// Calls lists the offsets of the opcodes that call it or build it
	// (REDUCE, NEWOBJ, NEWOBJ_EX, OBJ, INST, BUILD).
	Calls []int64
	// Dynamic is set when the module or name was not a string constant (a
	// STACK_GLOBAL whose operands were computed), or for EXT opcodes.
	Dynamic bool
}

// String is one string or bytes constant.
type String struct {
	Offset int64
	Value  string
	// Key is the dotted path of dict keys the string was set under, as
	// the stream builds it ("wandb.api_key" for {'wandb': {'api_key': s}};
	// an item of a list or tuple has the list's path), or "" for a string
	// that is no dict value. See keyPath.
	Key string
}

// ProblemKind classifies what is wrong with a stream.
type ProblemKind int

// Problem kinds.
const (
	// Malformed: truncated stream, unknown opcode, bad argument, stack
	// underflow, unknown memo key, a limit exceeded.
	Malformed ProblemKind = iota
	// Trailing: bytes after the STOP of the first stream.
	Trailing
	// Frame: an opcode crosses the end of the FRAME it starts in, or a
	// FRAME starts inside another, which the C unpickler accepts and
	// pickletools and the Python unpickler read differently.
	Frame
	// Protocol: a PROTO opcode that is not the first opcode (the unpickler
	// accepts it; no pickler writes it). A protocol above 5 is Malformed.
	Protocol
)

// Problem is one thing wrong with a stream.
type Problem struct {
	Kind   ProblemKind
	Offset int64
	Msg    string
}

// Result is what a walk found.
type Result struct {
	Globals  []Global
	Strings  []String
	Problems []Problem
	// Streams is the number of pickle streams walked (ended by STOP or not).
	Streams int
	// End is the offset just after the last byte read.
	End int64
	// Ops counts the opcodes walked.
	Ops int64
	// PersIDs counts persistent ids (PERSID/BINPERSID), which PyTorch uses
	// for its storages.
	PersIDs int
	// StringsTruncated is set when strings were dropped from Strings.
	StringsTruncated bool
	// Limited is set when a structural limit (stack, marks, memo) was
	// reached: what was past it was dropped, but every opcode was walked.
	Limited bool
	// Storages are PyTorch persistent ids ('storage', type, key, location,
	// numel, ...), at most 1<<20.
	Storages []Storage
	// Nested are string or bytes constants that are themselves pickles
	// (torch.storage._load_from_bytes, pickle.loads payloads), whole up to
	// Limits.MaxString, at most 16.
	Nested []String
}

// Storage is one PyTorch storage persistent id.
type Storage struct {
	Type  string // module.name of the storage class, e.g. torch.FloatStorage
	Key   string
	Numel int64
}

// Hooks let a caller react to objects the stream builds.
type Hooks struct {
	// AfterBuild is called after a BUILD opcode whose object was made by
	// calling global g (its index in Result.Globals) with args and state. It
	// may consume bytes that follow (joblib writes array data inline) through
	// r; it returns a problem message to record, or "".
	AfterBuild func(w *Walker, g int, args, state *Value) string
	// Nested, when set, is called with every string or bytes constant that
	// is itself a pickle (whole up to Limits.MaxString), instead of keeping
	// at most 16 of them in Result.Nested.
	Nested func(off int64, data string)
	// Constant, when set, is called with every string or bytes constant of
	// at least 16 bytes that is not itself a pickle (whole up to
	// Limits.MaxString): a caller looks for pickles and code encoded in it
	// (base64, hex, compressed).
	Constant func(off int64, kind Kind, data string)
	// Call, when set, is called at every call opcode (REDUCE, NEWOBJ,
	// NEWOBJ_EX, OBJ, INST) whose callable comes from global g (its index
	// in Result.Globals), with the call's arguments (a KTuple). String
	// values carry their offset in Int, so that a caller can say where a
	// constant that reaches exec() is.
	Call func(w *Walker, g int, args *Value, off int64)
	// Strings, when set, is handed Result.Strings each time they reach
	// Limits.MaxStringsBytes, and they are cleared: every string is seen,
	// with bounded memory. What is left at the end stays in Result.Strings.
	Strings func(ss []String)
}

// Walker walks pickle streams. Use Walk unless you need hooks.
type Walker struct {
	r      *bufio.Reader
	pos    int64
	lim    Limits
	hooks  Hooks
	res    *Result
	strLen int

	scratch []byte

	stack   []*Value
	marks   []int
	memo    memo
	frameAt int64 // end of the current frame; -1 outside frames
	opEnd   int64 // end of the current opcode's own bytes, before any hook reads on
	proto   int
	stopped bool
	// stackOver, marksOver, memoOver: the limit was reached in this stream.
	stackOver, marksOver, memoOver bool
}

// Kind is the kind of a symbolic value.
type Kind uint8

// Value kinds.
const (
	KUnknown Kind = iota
	KNone
	KBool
	KInt
	KFloat
	KStr
	KBytes
	KTuple
	KList
	KDict
	KSet
	KGlobal
	KObject // the result of a call or of NEWOBJ/OBJ/INST
	KPers   // a persistent-id object
)

// maxItems is how many items of a tuple, list or dict a Value keeps.
const maxItems = 32

// Value is a symbolic value on the stack or in the memo.
type Value struct {
	Kind Kind
	// frozen values are shared placeholders that must not be filled.
	frozen bool
	// filled is set on a container once items (or a BUILD state) went
	// into it: a string pushed right after an unfilled dict is its key.
	filled bool
	// at is the depth of the stack a container was made at, and path
	// where it sits in the object tree (keyPath).
	at   int32
	path *keyPath
	Int  int64
	Str  string
	// Int is an integer's value, and a string or bytes constant's offset.
	// Items of a tuple or list (at most maxItems), or keys and values
	// alternating for a dict.
	Items []*Value
	// Global is the index in Result.Globals for KGlobal, or of the callable
	// for a KObject made by calling a global; -1 otherwise.
	Global int
	// Args are the call's arguments of a KObject; State the last BUILD state.
	Args, State *Value
}

// leanMemo is the memo size above which containers are memoised as shared
// placeholders (their contents dropped), so that a pickle of millions of
// objects costs memory for its strings, not for every object.
const leanMemo = 1 << 16

// leanString is how much of a string memoised past leanMemo is kept.
const leanString = 256

var opaque = map[Kind]*Value{
	KDict:  {Kind: KDict, Global: -1, frozen: true},
	KList:  {Kind: KList, Global: -1, frozen: true},
	KSet:   {Kind: KSet, Global: -1, frozen: true},
	KTuple: {Kind: KTuple, Global: -1, frozen: true},
}

var (
	unknown = &Value{Kind: KUnknown, Global: -1}
	vNone   = &Value{Kind: KNone, Global: -1}
	vTrue   = &Value{Kind: KBool, Int: 1, Global: -1}
	vFalse  = &Value{Kind: KBool, Global: -1}
	vFloat  = &Value{Kind: KFloat, Global: -1}
)

// smallInts are the values of the ints 0 to 255, shared by every walk;
// made at first use (not at init: a process that reads no pickle, such
// as the per-job sbatch hook, never needs them).
var smallInts = sync.OnceValue(func() *[256]Value {
	var a [256]Value
	for i := range a {
		a[i] = Value{Kind: KInt, Int: int64(i), Global: -1}
	}
	return &a
})

func (w *Walker) intValue(n int64) *Value {
	if n >= 0 && n < 256 {
		return &smallInts()[n]
	}
	return w.val(Value{Kind: KInt, Int: n, Global: -1})
}

// Get returns the dict value under key k, or nil.
func (v *Value) Get(k string) *Value {
	if v == nil || v.Kind != KDict {
		return nil
	}
	for i := 0; i+1 < len(v.Items); i += 2 {
		if v.Items[i].Kind == KStr && v.Items[i].Str == k {
			return v.Items[i+1]
		}
	}
	return nil
}

// Walk walks every pickle stream in r until the end of the input (or
// Limits.MaxStreams streams) and returns what it found. It never fails: what
// it cannot read is a Problem.
func Walk(r io.Reader, lim Limits) *Result {
	w := NewWalker(r, lim, Hooks{})
	return w.Run()
}

// NewWalker returns a walker over r.
func NewWalker(r io.Reader, lim Limits, h Hooks) *Walker {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &Walker{r: br, lim: lim.withDefaults(), hooks: h, res: &Result{}, frameAt: -1}
}

// Result returns what the walk found so far.
func (w *Walker) Result() *Result { return w.res }

// Pos returns the offset of the next byte to read.
func (w *Walker) Pos() int64 { return w.pos }

// Run walks streams until the input ends.
func (w *Walker) Run() *Result {
	for {
		if w.lim.MaxStreams > 0 && w.res.Streams >= w.lim.MaxStreams {
			break
		}
		if _, err := w.r.Peek(1); err != nil {
			break
		}
		start := w.pos
		if w.res.Streams == 1 {
			w.problem(Trailing, start, "data after the first pickle's STOP opcode")
		}
		ok := w.stream()
		if !ok {
			// The stream is broken; look for another one further on so that
			// a payload placed after garbage is still seen.
			if !w.resync() {
				break
			}
		}
	}
	w.res.End = w.pos
	return w.res
}

// RunStream walks exactly one stream from the current position (used for
// pickles nested inline, as joblib writes object arrays). It reports
// whether the stream ended with STOP.
func (w *Walker) RunStream() bool {
	saved := struct {
		stack   []*Value
		marks   []int
		memo    memo
		frameAt int64
		proto   int
	}{w.stack, w.marks, w.memo, w.frameAt, w.proto}
	ok := w.stream()
	w.stack, w.marks, w.memo, w.frameAt, w.proto = saved.stack, saved.marks, saved.memo, saved.frameAt, saved.proto
	w.stopped = false
	return ok
}

// Skip consumes n bytes of the input (inline array data); it reports
// whether they were all there.
func (w *Walker) Skip(n int64) bool {
	for n > 0 {
		chunk := n
		if chunk > 1<<30 {
			chunk = 1 << 30
		}
		d, err := w.r.Discard(int(chunk))
		w.pos += int64(d)
		n -= int64(d)
		if err != nil {
			return false
		}
	}
	return true
}

// ReadByte reads one byte of the input (joblib's padding length).
func (w *Walker) ReadByte() (byte, error) {
	b, err := w.r.ReadByte()
	if err == nil {
		w.pos++
	}
	return b, err
}

// resync scans forward, to the end of the input if need be, for bytes that
// can start a new protocol 2+ stream and positions the reader there, so that
// a payload placed after any amount of garbage is still walked.
func (w *Walker) resync() bool {
	for {
		buf, err := w.r.Peek(w.r.Size())
		if len(buf) < 2 {
			return false
		}
		for i := 0; i+1 < len(buf); i++ {
			i0 := bytes.IndexByte(buf[i:], 0x80)
			if i0 < 0 || i+i0+1 >= len(buf) {
				break
			}
			i += i0
			if buf[i+1] >= 2 && buf[i+1] <= 5 {
				w.r.Discard(i)
				w.pos += int64(i)
				return true
			}
		}
		// Keep the last byte: it may be the 0x80 of a pair cut by the buffer.
		d, _ := w.r.Discard(len(buf) - 1)
		w.pos += int64(d)
		if err != nil {
			return false
		}
	}
}

var errStop = errors.New("stop")

func (w *Walker) problem(k ProblemKind, off int64, format string, args ...any) {
	if len(w.res.Problems) >= w.lim.MaxProblems {
		return
	}
	w.res.Problems = append(w.res.Problems, Problem{Kind: k, Offset: off, Msg: fmt.Sprintf(format, args...)})
}

// stream walks one stream; it reports whether it ended with STOP.
func (w *Walker) stream() bool {
	w.res.Streams++
	w.stack = w.stack[:0]
	w.marks = w.marks[:0]
	w.memo = memo{}
	w.frameAt = -1
	w.proto = 0
	w.stopped = false
	w.stackOver, w.marksOver, w.memoOver = false, false, false
	first := true
	for {
		off := w.pos
		op, err := w.r.ReadByte()
		if err != nil {
			if first {
				return true
			}
			w.problem(Malformed, off, "truncated pickle: input ends without a STOP opcode")
			return false
		}
		w.pos++
		w.res.Ops++
		w.opEnd = -1
		err = w.step(op, off, first)
		first = false
		end := w.pos
		if w.opEnd >= 0 {
			end = w.opEnd // a hook consumed data written outside the frame
		}
		if w.frameAt >= 0 && end > w.frameAt {
			w.problem(Frame, off, "opcode %s at offset %d crosses the end of its FRAME at %d; CPython's C unpickler and pickletools read such a stream differently", opName(op), off, w.frameAt)
			w.frameAt = -1
		}
		if w.frameAt >= 0 && end == w.frameAt {
			w.frameAt = -1
		}
		if err == errStop {
			return true
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			w.problem(Malformed, off, "truncated pickle: input ends inside %s at offset %d", opName(op), off)
			return false
		}
		if err != nil {
			w.problem(Malformed, off, "%v", err)
			return false
		}
	}
}

// push puts v on the stack. At MaxStack the bottom half of the stack is
// dropped and the walk goes on (a limit is recorded once per stream), so that
// an import and its call after a deliberately deep stack are still seen.
func (w *Walker) push(v *Value) error {
	if len(w.stack) >= w.lim.MaxStack {
		w.overLimit(&w.stackOver, "stack deeper than %d entries: the bottom of the stack was dropped, the opcodes after it still walked", w.lim.MaxStack)
		n := len(w.stack) / 2
		w.stack = w.stack[:copy(w.stack, w.stack[n:])]
		for i := range w.marks {
			w.marks[i] = max(0, w.marks[i]-n)
		}
	}
	w.stack = append(w.stack, v)
	return nil
}

// overLimit records a structural limit once per stream.
func (w *Walker) overLimit(seen *bool, format string, args ...any) {
	if *seen {
		return
	}
	*seen = true
	w.res.Limited = true
	w.problem(Malformed, w.pos-1, format, args...)
}

// pop never fails: an underflow is recorded and an unknown value returned,
// so that the walk goes on and later imports are still seen.
func (w *Walker) pop(off int64, op byte) *Value {
	floor := 0
	if len(w.marks) > 0 {
		floor = w.marks[len(w.marks)-1]
	}
	if len(w.stack) <= floor {
		w.problem(Malformed, off, "stack underflow at %s (offset %d)", opName(op), off)
		return unknown
	}
	v := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	return v
}

func (w *Walker) top(off int64, op byte) *Value {
	if len(w.stack) == 0 {
		w.problem(Malformed, off, "stack underflow at %s (offset %d)", opName(op), off)
		return unknown
	}
	return w.stack[len(w.stack)-1]
}

// popMark pops everything down to the last MARK.
func (w *Walker) popMark(off int64, op byte) []*Value {
	if len(w.marks) == 0 {
		w.problem(Malformed, off, "%s without a MARK (offset %d)", opName(op), off)
		items := w.stack
		w.stack = w.stack[:0]
		return items
	}
	m := w.marks[len(w.marks)-1]
	w.marks = w.marks[:len(w.marks)-1]
	if m > len(w.stack) {
		m = len(w.stack)
	}
	items := append([]*Value(nil), w.stack[m:]...)
	w.stack = w.stack[:m]
	return items
}

// read returns the next n bytes in a buffer reused by the next read.
func (w *Walker) read(n int) ([]byte, error) {
	if cap(w.scratch) < n {
		w.scratch = make([]byte, n)
	}
	b := w.scratch[:n]
	k, err := io.ReadFull(w.r, b)
	w.pos += int64(k)
	if err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

func (w *Walker) readUint(n int) (uint64, error) {
	b, err := w.read(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, nil
}

// readData reads a length-prefixed constant of n bytes, keeping at most
// MaxString of them.
func (w *Walker) readData(n uint64) (string, error) {
	keep := n
	if keep > uint64(w.lim.MaxString) {
		keep = uint64(w.lim.MaxString)
	}
	b, err := w.read(int(keep))
	if err != nil {
		return "", err
	}
	if rest := n - keep; rest > 0 {
		if rest > math.MaxInt64 || !w.Skip(int64(rest)) {
			return "", io.ErrUnexpectedEOF
		}
	}
	return string(b), nil
}

func (w *Walker) readLine() (string, error) {
	var sb []byte
	for {
		b, err := w.r.ReadByte()
		if err != nil {
			return "", io.ErrUnexpectedEOF
		}
		w.pos++
		if b == '\n' {
			return string(sb), nil
		}
		if len(sb) >= w.lim.MaxLine {
			return "", fmt.Errorf("text argument longer than %d bytes", w.lim.MaxLine)
		}
		sb = append(sb, b)
	}
}

func (w *Walker) keepString(off int64, s string) {
	if len(s) < w.lim.MinStringLen {
		return
	}
	if len(s) > 4096 {
		s = s[:4096]
	}
	if w.strLen+len(s) > w.lim.MaxStringsBytes {
		if w.hooks.Strings == nil {
			w.res.StringsTruncated = true
			return
		}
		w.hooks.Strings(w.res.Strings)
		w.res.Strings, w.strLen = nil, 0
	}
	w.strLen += len(s)
	w.res.Strings = append(w.res.Strings, String{Offset: off, Value: s})
}

func (w *Walker) strValue(off int64, k Kind, s string) *Value {
	if len(s) > 3 && s[0] == 0x80 && s[1] >= 2 && s[1] <= 5 {
		if w.hooks.Nested != nil {
			w.hooks.Nested(off, s)
		} else if len(w.res.Nested) < 16 {
			w.res.Nested = append(w.res.Nested, String{Offset: off, Value: s})
		}
	} else if len(s) >= 16 && w.hooks.Constant != nil {
		w.hooks.Constant(off, k, s)
	}
	w.keepString(off, s)
	if len(s) > 4096 && k == KBytes {
		s = s[:4096] // only the head of large bytes is ever looked at
	}
	return w.val(Value{Kind: k, Str: s, Int: off, Global: -1})
}

func (w *Walker) addGlobal(off int64, op, module, name string, dynamic bool) *Value {
	w.res.Globals = append(w.res.Globals, Global{Module: module, Name: name, Offset: off, Op: op, Dynamic: dynamic})
	return &Value{Kind: KGlobal, Global: len(w.res.Globals) - 1}
}

// val returns a new value. (Carving values from slabs cut allocations by
// 40% but kept whole slabs alive through the memo: more memory, no faster.)
func (w *Walker) val(v Value) *Value {
	p := new(Value)
	*p = v
	return p
}

// call records a call site and returns the object it makes.
func (w *Walker) call(off int64, callable, args *Value) *Value {
	g := -1
	switch callable.Kind {
	case KGlobal:
		g = callable.Global
	case KObject:
		// Calling the result of a call (getattr(...)(...)): tie it to the
		// global that produced the callable.
		g = callable.Global
	}
	if g >= 0 && g < len(w.res.Globals) {
		gl := &w.res.Globals[g]
		if len(gl.Calls) < 16 {
			gl.Calls = append(gl.Calls, off)
		}
		if w.hooks.Call != nil {
			w.hooks.Call(w, g, args, off)
		}
	}
	return w.val(Value{Kind: KObject, Global: g, Args: args, path: w.here(), at: int32(len(w.stack))})
}

func (w *Walker) tuple(items []*Value) *Value {
	v := w.val(Value{Kind: KTuple, Global: -1})
	if len(items) > maxItems {
		items = items[:maxItems]
	}
	v.Items = append([]*Value(nil), items...)
	return v
}

// memo is dense (pages of a slice, so that growing it never copies) for the
// keys picklers write (0, 1, 2, ... in order) and sparse (a map) for
// anything else.
type memo struct {
	pages  [][]*Value
	n      int // dense entries: keys 0..n-1 are in pages
	sparse map[uint64]*Value
}

const memoPage = 4096

func (m *memo) len() int { return m.n + len(m.sparse) }

func (m *memo) get(k uint64) (*Value, bool) {
	if k < uint64(m.n) {
		v := m.pages[k/memoPage][k%memoPage]
		return v, v != nil
	}
	v, ok := m.sparse[k]
	return v, ok
}

func (m *memo) put(k uint64, v *Value) {
	switch {
	case k < uint64(m.n):
		m.pages[k/memoPage][k%memoPage] = v
		return
	case k == uint64(m.n) && m.sparse == nil:
		if m.n%memoPage == 0 {
			m.pages = append(m.pages, make([]*Value, memoPage))
		}
		m.pages[k/memoPage][k%memoPage] = v
		m.n++
		return
	}
	if m.sparse == nil {
		m.sparse = map[uint64]*Value{}
	}
	m.sparse[k] = v
}

func (w *Walker) memoPut(off int64, key uint64, v *Value) error {
	if w.memo.len() >= w.lim.MaxMemo {
		if _, ok := w.memo.get(key); !ok {
			w.overLimit(&w.memoOver, "memo larger than %d entries: entries past it were dropped, the opcodes after it still walked", w.lim.MaxMemo)
			return nil
		}
	}
	if w.memo.len() >= leanMemo {
		switch v.Kind {
		case KDict, KList, KSet, KTuple:
			v = opaque[v.Kind]
		case KStr, KBytes:
			// Long strings are only ever compared as module and attribute
			// names (STACK_GLOBAL operands) or sniffed: keep their head.
			if len(v.Str) > leanString {
				v = &Value{Kind: v.Kind, Str: strings.Clone(v.Str[:leanString]), Int: v.Int, Global: -1}
			}
		case KObject:
			// Keep small argument tuples (numpy.dtype('f8', False, True),
			// which joblib arrays refer back to), drop the rest.
			c := &Value{Kind: KObject, Global: v.Global}
			if v.Args != nil && v.Args.Kind == KTuple && len(v.Args.Items) <= 4 {
				c.Args = v.Args
			}
			v = c
		}
	}
	w.memo.put(key, v)
	return nil
}

func (w *Walker) memoGet(off int64, op byte, key uint64) error {
	v, ok := w.memo.get(key)
	if !ok {
		w.problem(Malformed, off, "%s of memo key %d that was never stored (offset %d)", opName(op), key, off)
		v = unknown
	}
	return w.push(v)
}

func appendItems(list *Value, items ...*Value) {
	if list.frozen || list.Kind != KList && list.Kind != KSet {
		return
	}
	for _, it := range items {
		if len(list.Items) >= maxItems {
			return
		}
		list.Items = append(list.Items, it)
	}
}

func setItems(d *Value, kv []*Value) {
	if d.frozen || d.Kind != KDict {
		return
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if len(d.Items) >= 2*maxItems {
			return
		}
		d.Items = append(d.Items, kv[i], kv[i+1])
	}
}

// step executes one opcode symbolically.
func (w *Walker) step(op byte, off int64, first bool) error {
	switch op {
	case '.': // STOP
		w.pop(off, op)
		w.stopped = true
		return errStop
	case '(': // MARK
		if len(w.marks) >= w.lim.MaxStack {
			w.overLimit(&w.marksOver, "more than %d nested MARKs: the oldest were dropped, the opcodes after them still walked", w.lim.MaxStack)
			w.marks = w.marks[:copy(w.marks, w.marks[len(w.marks)/2:])]
		}
		w.marks = append(w.marks, len(w.stack))
	case '0': // POP
		if len(w.marks) > 0 && w.marks[len(w.marks)-1] == len(w.stack) {
			w.marks = w.marks[:len(w.marks)-1] // POP of a mark, as CPython does
			return nil
		}
		w.pop(off, op)
	case '1': // POP_MARK
		w.popMark(off, op)
	case '2': // DUP
		return w.push(w.top(off, op))
	case 'F', 'I', 'L': // FLOAT, INT, LONG (text)
		s, err := w.readLine()
		if err != nil {
			return err
		}
		v := &Value{Kind: KInt, Global: -1}
		switch {
		case op == 'F':
			v.Kind = KFloat
		case op == 'I' && s == "00":
			v.Kind = KBool
		case op == 'I' && s == "01":
			v.Kind, v.Int = KBool, 1
		default:
			n, err := strconv.ParseInt(strings.TrimSuffix(s, "L"), 10, 64)
			if err == nil {
				v.Int = n
			}
		}
		return w.push(v)
	case 'J': // BININT
		n, err := w.readUint(4)
		if err != nil {
			return err
		}
		return w.push(w.intValue(int64(int32(uint32(n)))))
	case 'K': // BININT1
		n, err := w.readUint(1)
		if err != nil {
			return err
		}
		return w.push(w.intValue(int64(n)))
	case 'M': // BININT2
		n, err := w.readUint(2)
		if err != nil {
			return err
		}
		return w.push(w.intValue(int64(n)))
	case 0x8a, 0x8b: // LONG1, LONG4
		size := 1
		if op == 0x8b {
			size = 4
		}
		n, err := w.readUint(size)
		if err != nil {
			return err
		}
		if op == 0x8b && int32(uint32(n)) < 0 {
			return fmt.Errorf("LONG4 with negative length")
		}
		s, err := w.readData(n)
		if err != nil {
			return err
		}
		v := &Value{Kind: KInt, Global: -1, Str: ""}
		if len(s) <= 8 {
			var x int64
			for i := len(s) - 1; i >= 0; i-- {
				x = x<<8 | int64(s[i])
			}
			if len(s) > 0 && len(s) < 8 && s[len(s)-1]&0x80 != 0 {
				x -= int64(1) << (8 * len(s))
			}
			v.Int = x
		}
		if len(s) <= 64 {
			v.Str = s // raw little-endian bytes, for LegacyMagic
		}
		return w.push(v)
	case 'G': // BINFLOAT
		if _, err := w.read(8); err != nil {
			return err
		}
		return w.push(vFloat)
	case 'N':
		return w.push(vNone)
	case 0x88: // NEWTRUE
		return w.push(vTrue)
	case 0x89: // NEWFALSE
		return w.push(vFalse)
	case 'P': // PERSID
		s, err := w.readLine()
		if err != nil {
			return err
		}
		w.res.PersIDs++
		return w.push(&Value{Kind: KPers, Str: s, Global: -1})
	case 'Q': // BINPERSID
		pid := w.pop(off, op)
		w.res.PersIDs++
		if it := pid.Items; pid.Kind == KTuple && len(it) >= 5 && it[0].Kind == KStr && it[0].Str == "storage" &&
			it[1].Kind == KGlobal && it[2].Kind == KStr && it[4].Kind == KInt && len(w.res.Storages) < 1<<20 {
			g := w.res.Globals[it[1].Global]
			w.res.Storages = append(w.res.Storages, Storage{Type: g.Module + "." + g.Name, Key: it[2].Str, Numel: it[4].Int})
		}
		return w.push(&Value{Kind: KPers, Args: pid, Global: -1})
	case 'R': // REDUCE
		args := w.pop(off, op)
		callable := w.pop(off, op)
		return w.push(w.call(off, callable, args))
	case 'S': // STRING
		s, err := w.readLine()
		if err != nil {
			return err
		}
		if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
			if u, err := strconv.Unquote("\"" + strings.ReplaceAll(s[1:len(s)-1], "\"", "\\\"") + "\""); err == nil {
				s = u
			} else {
				s = s[1 : len(s)-1]
			}
		} else {
			return fmt.Errorf("STRING argument is not quoted")
		}
		return w.push(w.strValue(off, KStr, s))
	case 'T', 'B': // BINSTRING, BINBYTES (4-byte length)
		n, err := w.readUint(4)
		if err != nil {
			return err
		}
		if op == 'T' && int32(uint32(n)) < 0 {
			return fmt.Errorf("BINSTRING with negative length")
		}
		s, err := w.readData(n)
		if err != nil {
			return err
		}
		k := KBytes
		if op == 'T' {
			k = KStr // a py2 str, which Python 3 decodes to str by default
		}
		return w.push(w.strValue(off, k, s))
	case 'U', 'C', 0x8c: // SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE
		n, err := w.readUint(1)
		if err != nil {
			return err
		}
		s, err := w.readData(n)
		if err != nil {
			return err
		}
		k := KStr
		if op == 'C' {
			k = KBytes
		}
		return w.push(w.strValue(off, k, s))
	case 'V': // UNICODE (raw-unicode-escape)
		s, err := w.readLine()
		if err != nil {
			return err
		}
		return w.push(w.strValue(off, KStr, rawUnicodeUnescape(s)))
	case 'X': // BINUNICODE
		n, err := w.readUint(4)
		if err != nil {
			return err
		}
		s, err := w.readData(n)
		if err != nil {
			return err
		}
		return w.push(w.strValue(off, KStr, s))
	case 0x8d, 0x8e, 0x96: // BINUNICODE8, BINBYTES8, BYTEARRAY8
		n, err := w.readUint(8)
		if err != nil {
			return err
		}
		if n > math.MaxInt64 {
			return fmt.Errorf("%s length %d too large", opName(op), n)
		}
		s, err := w.readData(n)
		if err != nil {
			return err
		}
		k := KBytes
		if op == 0x8d {
			k = KStr
		}
		return w.push(w.strValue(off, k, s))
	case 'a': // APPEND
		v := w.pop(off, op)
		l := w.top(off, op)
		appendItems(l, v)
		w.listed(l, []*Value{v})
	case 'e': // APPENDS
		items := w.popMark(off, op)
		l := w.top(off, op)
		appendItems(l, items...)
		w.listed(l, items)
	case 0x90: // ADDITEMS
		items := w.popMark(off, op)
		appendItems(w.top(off, op), items...)
	case 'b': // BUILD
		state := w.pop(off, op)
		obj := w.top(off, op)
		if obj.Kind == KObject || obj.Kind == KGlobal {
			// BUILD calls obj.__setstate__(state): tie it to the class.
			if obj.Global >= 0 && obj.Global < len(w.res.Globals) {
				gl := &w.res.Globals[obj.Global]
				if len(gl.Calls) < 16 {
					gl.Calls = append(gl.Calls, off)
				}
			}
			if !obj.frozen {
				obj.State, obj.filled = state, true
			}
			if w.hooks.AfterBuild != nil && obj.Kind == KObject && obj.Global >= 0 {
				opEnd := w.pos
				msg := w.hooks.AfterBuild(w, obj.Global, obj.Args, state)
				w.opEnd = opEnd
				if msg != "" {
					w.problem(Malformed, off, "%s", msg)
				}
			}
		}
	case 'c', 'i': // GLOBAL, INST
		module, err := w.readLine()
		if err != nil {
			return err
		}
		name, err := w.readLine()
		if err != nil {
			return err
		}
		if op == 'c' {
			return w.push(w.addGlobal(off, "GLOBAL", module, name, false))
		}
		g := w.addGlobal(off, "INST", module, name, false)
		args := w.tuple(w.popMark(off, op))
		return w.push(w.call(off, g, args))
	case 0x93: // STACK_GLOBAL
		name := w.pop(off, op)
		module := w.pop(off, op)
		if module.Kind == KStr && name.Kind == KStr {
			return w.push(w.addGlobal(off, "STACK_GLOBAL", module.Str, name.Str, false))
		}
		return w.push(w.addGlobal(off, "STACK_GLOBAL", describe(module), describe(name), true))
	case 0x82, 0x83, 0x84: // EXT1, EXT2, EXT4
		size := map[byte]int{0x82: 1, 0x83: 2, 0x84: 4}[op]
		code, err := w.readUint(size)
		if err != nil {
			return err
		}
		return w.push(w.addGlobal(off, opName(op), "copyreg extension", strconv.FormatUint(code, 10), true))
	case 'd': // DICT
		kv := w.popMark(off, op)
		d := w.val(Value{Kind: KDict, Global: -1, path: w.here(), at: int32(len(w.stack))})
		setItems(d, kv)
		w.keyed(d, kv)
		return w.push(d)
	case '}':
		return w.push(w.val(Value{Kind: KDict, Global: -1, path: w.here(), at: int32(len(w.stack))}))
	case 'l': // LIST
		items := w.popMark(off, op)
		l := w.val(Value{Kind: KList, Global: -1, path: w.here(), at: int32(len(w.stack))})
		appendItems(l, items...)
		w.listed(l, items)
		return w.push(l)
	case ']':
		return w.push(w.val(Value{Kind: KList, Global: -1, path: w.here(), at: int32(len(w.stack))}))
	case 't': // TUPLE
		return w.push(w.keyedTuple(w.popMark(off, op)))
	case ')':
		return w.push(w.val(Value{Kind: KTuple, Global: -1}))
	case 0x85, 0x86, 0x87: // TUPLE1/2/3
		n := int(op - 0x84)
		items := make([]*Value, n)
		for i := n - 1; i >= 0; i-- {
			items[i] = w.pop(off, op)
		}
		return w.push(w.keyedTuple(items))
	case 0x8f: // EMPTY_SET
		return w.push(&Value{Kind: KSet, Global: -1})
	case 0x91: // FROZENSET
		items := w.popMark(off, op)
		s := &Value{Kind: KSet, Global: -1}
		appendItems(s, items...)
		return w.push(s)
	case 's': // SETITEM
		v := w.pop(off, op)
		k := w.pop(off, op)
		d := w.top(off, op)
		setItems(d, []*Value{k, v})
		w.keyed(d, []*Value{k, v})
	case 'u': // SETITEMS
		kv := w.popMark(off, op)
		d := w.top(off, op)
		setItems(d, kv)
		w.keyed(d, kv)
	case 'g': // GET
		s, err := w.readLine()
		if err != nil {
			return err
		}
		k, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("GET with a bad memo key %q", s)
		}
		return w.memoGet(off, op, k)
	case 'h':
		k, err := w.readUint(1)
		if err != nil {
			return err
		}
		return w.memoGet(off, op, k)
	case 'j':
		k, err := w.readUint(4)
		if err != nil {
			return err
		}
		return w.memoGet(off, op, k)
	case 'p': // PUT
		s, err := w.readLine()
		if err != nil {
			return err
		}
		k, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("PUT with a bad memo key %q", s)
		}
		return w.memoPut(off, k, w.top(off, op))
	case 'q':
		k, err := w.readUint(1)
		if err != nil {
			return err
		}
		return w.memoPut(off, k, w.top(off, op))
	case 'r':
		k, err := w.readUint(4)
		if err != nil {
			return err
		}
		return w.memoPut(off, k, w.top(off, op))
	case 0x94: // MEMOIZE
		return w.memoPut(off, uint64(w.memo.len()), w.top(off, op))
	case 'o': // OBJ
		items := w.popMark(off, op)
		if len(items) == 0 {
			w.problem(Malformed, off, "OBJ without a class (offset %d)", off)
			return w.push(unknown)
		}
		return w.push(w.call(off, items[0], w.tuple(items[1:])))
	case 0x81: // NEWOBJ
		args := w.pop(off, op)
		cls := w.pop(off, op)
		return w.push(w.call(off, cls, args))
	case 0x92: // NEWOBJ_EX
		kwargs := w.pop(off, op)
		args := w.pop(off, op)
		cls := w.pop(off, op)
		_ = kwargs
		return w.push(w.call(off, cls, args))
	case 0x80: // PROTO
		v, err := w.readUint(1)
		if err != nil {
			return err
		}
		if v > 5 {
			w.problem(Malformed, off, "unsupported pickle protocol %d (the unpickler refuses it)", v)
		}
		if !first {
			w.problem(Protocol, off, "PROTO opcode that is not the first opcode of the stream (offset %d)", off)
		}
		w.proto = int(v)
	case 0x95: // FRAME
		n, err := w.readUint(8)
		if err != nil {
			return err
		}
		if w.frameAt >= 0 {
			w.problem(Frame, off, "FRAME inside a FRAME (offset %d)", off)
		}
		if n > math.MaxInt64/2 {
			return fmt.Errorf("FRAME length %d too large", n)
		}
		w.frameAt = w.pos + int64(n)
	case 0x97: // NEXT_BUFFER
		return w.push(&Value{Kind: KBytes, Global: -1})
	case 0x98: // READONLY_BUFFER
		w.top(off, op)
	default:
		return fmt.Errorf("unknown opcode 0x%02x at offset %d", op, off)
	}
	return nil
}

func describe(v *Value) string {
	switch v.Kind {
	case KStr:
		return v.Str
	case KGlobal:
		return "<imported global>"
	case KObject:
		return "<result of a call>"
	case KBytes:
		return "<bytes>"
	}
	return "<computed value>"
}

func rawUnicodeUnescape(s string) string {
	if !strings.Contains(s, `\u`) && !strings.Contains(s, `\U`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') {
			n := 4
			if s[i+1] == 'U' {
				n = 8
			}
			if i+2+n <= len(s) {
				if r, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32); err == nil {
					sb.WriteRune(rune(r))
					i += 1 + n
					continue
				}
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

var opNames = map[byte]string{
	'(': "MARK", '.': "STOP", '0': "POP", '1': "POP_MARK", '2': "DUP", 'F': "FLOAT", 'I': "INT",
	'J': "BININT", 'K': "BININT1", 'L': "LONG", 'M': "BININT2", 'N': "NONE", 'P': "PERSID",
	'Q': "BINPERSID", 'R': "REDUCE", 'S': "STRING", 'T': "BINSTRING", 'U': "SHORT_BINSTRING",
	'V': "UNICODE", 'X': "BINUNICODE", 'a': "APPEND", 'b': "BUILD", 'c': "GLOBAL", 'd': "DICT",
	'}': "EMPTY_DICT", 'e': "APPENDS", 'g': "GET", 'h': "BINGET", 'i': "INST", 'j': "LONG_BINGET",
	'l': "LIST", ']': "EMPTY_LIST", 'o': "OBJ", 'p': "PUT", 'q': "BINPUT", 'r': "LONG_BINPUT",
	's': "SETITEM", 't': "TUPLE", ')': "EMPTY_TUPLE", 'u': "SETITEMS", 'G': "BINFLOAT",
	0x80: "PROTO", 0x81: "NEWOBJ", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4", 0x85: "TUPLE1",
	0x86: "TUPLE2", 0x87: "TUPLE3", 0x88: "NEWTRUE", 0x89: "NEWFALSE", 0x8a: "LONG1", 0x8b: "LONG4",
	'B': "BINBYTES", 'C': "SHORT_BINBYTES", 0x8c: "SHORT_BINUNICODE", 0x8d: "BINUNICODE8",
	0x8e: "BINBYTES8", 0x8f: "EMPTY_SET", 0x90: "ADDITEMS", 0x91: "FROZENSET", 0x92: "NEWOBJ_EX",
	0x93: "STACK_GLOBAL", 0x94: "MEMOIZE", 0x95: "FRAME", 0x96: "BYTEARRAY8", 0x97: "NEXT_BUFFER",
	0x98: "READONLY_BUFFER",
}

func opName(op byte) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("0x%02x", op)
}

// IsOpcode reports whether b is a pickle opcode.
func IsOpcode(b byte) bool { _, ok := opNames[b]; return ok }
