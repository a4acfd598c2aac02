package models

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ulikunitz/xz/lzma"

	"github.com/mlwarden/mlwarden/internal/unpack"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/models/pickle"
)

// Payloads are hidden inside models one layer under another: a pickle in a
// base64 string of a pickle (pickle.loads(base64.b64decode(...))), a
// zlib-compressed pickle in a bytes constant, exec() of source decoded
// from base64 or hex (codecs.decode(..., 'hex')), source holding another
// encoded stage, a pickle in a safetensors __metadata__ string. Each
// constant is peeled — base64, hex, zlib, gzip, bzip2, xz, lzma, at most
// maxPeel layers — and what comes out is scanned as the pickle or model
// file it is, or read as the Python source it is, and reported at the
// outer file with the path to it: "posix.system (GLOBAL) at offset 5 in
// member (base64 in a string constant at byte 1234) → (zlib)".

// maxPeel is how many encodings are peeled off one constant.
const maxPeel = 4

// maxPeeled is the most bytes one decoding of a constant may produce.
const maxPeeled = 64 << 20

// peel removes one encoding from data: the encoding's name and the bytes
// under it, or ok false.
func peel(data []byte) (string, []byte, bool) {
	if len(data) < 16 {
		return "", nil, false
	}
	switch {
	case isZlib(data):
		if r, err := zlib.NewReader(bytes.NewReader(data)); err == nil {
			return "zlib", readPeeled(r), true
		}
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		if r, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
			return "gzip", readPeeled(r), true
		}
	case bytes.HasPrefix(data, []byte("BZh")) && data[3] >= '1' && data[3] <= '9':
		return "bzip2", readPeeled(bzip2.NewReader(bytes.NewReader(data))), true
	case bytes.HasPrefix(data, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		// The reader allocates what a block header states (up to 4 GiB):
		// the headers are held to 8 MiB first, like the lzma case's.
		if checkXz(bytes.NewReader(data), int64(len(data)), 8<<20) != nil {
			break
		}
		if r, err := unpack.XZ(bytes.NewReader(data), lzma.MinDictCap); err == nil {
			return "xz", readPeeled(r), true
		}
	case isLzmaAlone(data) && data[1]|data[2]|data[3]|data[4] != 0 && int64(uint32(data[1])|uint32(data[2])<<8|uint32(data[3])<<16|uint32(data[4])<<24) <= 8<<20:
		if r, err := (lzma.ReaderConfig{DictCap: 8 << 20}).NewReader(bytes.NewReader(data)); err == nil {
			return "lzma", readPeeled(r), true
		}
	}
	t := bytes.TrimSpace(data)
	if isHexText(t) {
		out, err := hex.DecodeString(string(stripSpace(t)))
		if err == nil {
			return "hex", out, true
		}
	}
	if b, ok := base64Text(t); ok {
		return "base64", b, true
	}
	return "", nil, false
}

func readPeeled(r io.Reader) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, maxPeeled))
	return b
}

func stripSpace(b []byte) []byte {
	if !bytes.ContainsAny(b, " \t\r\n") {
		return b
	}
	return bytes.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, b)
}

func isHexText(b []byte) bool {
	n := 0
	for _, c := range b {
		switch {
		case isHexDigit(c):
			n++
		case c == ' ' || c == '\n' || c == '\r' || c == '\t':
		default:
			return false
		}
	}
	return n >= 16 && n%2 == 0
}

// base64Text decodes standard or URL-safe base64 (padded or not, lines
// allowed), as base64.b64decode and urlsafe_b64decode read it.
func base64Text(b []byte) ([]byte, bool) {
	std, url := true, true
	n := 0
	for _, c := range b {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			n++
		case c == '+' || c == '/':
			url = false
			n++
		case c == '-' || c == '_':
			std = false
			n++
		case c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t':
		default:
			return nil, false
		}
	}
	if n < 16 || !std && !url {
		return nil, false
	}
	s := strings.TrimRight(string(stripSpace(b)), "=")
	enc := base64.RawStdEncoding
	if !std {
		enc = base64.RawURLEncoding
	}
	out, err := enc.DecodeString(s)
	return out, err == nil
}

// payload is what peeling a constant led to.
type payload struct {
	steps []string // encodings peeled, outermost first
	data  []byte
	f     format // the format of data, fmtUnknown for text or nothing known
}

// unwrap peels data until it is in a known format or cannot be peeled.
func unwrap(data []byte) (payload, bool) {
	var p payload
	for range maxPeel {
		name, out, ok := peel(data)
		if !ok || len(out) == 0 {
			return p, len(p.steps) > 0
		}
		p.steps, p.data = append(p.steps, name), out
		if f := sniff(out, int64(len(out)), ""); f != fmtUnknown {
			p.f = f
			return p, true
		}
		data = out
	}
	return p, len(p.steps) > 0
}

// nestedConstant looks inside one string or bytes constant of a pickle.
func (sc *scan) nestedConstant(p place, off int64, kind pickle.Kind, data string) {
	pl, ok := unwrap([]byte(data))
	if !ok || pl.f == fmtUnknown {
		return
	}
	what := "string constant"
	if kind == pickle.KBytes {
		what = "bytes constant"
	}
	sc.nestedPayload(p, fmt.Sprintf("%s in a %s at byte %d", pl.steps[0], what, off), pl)
}

// nestedPayload scans a payload found inside p (a pickle, a zip, another
// model file), at most 8 places deep and maxNested in one file.
func (sc *scan) nestedPayload(p place, where string, pl payload) {
	if len(p) > 8 || sc.nested >= maxNested {
		sc.limit("nested pickle limit", p, fmt.Sprintf("Payloads nested in constants%s deeper than 8, or more than %d in one file, were not scanned.", p.in(), maxNested))
		return
	}
	sc.nested++
	q := p.child("(" + where + ")")
	for _, s := range pl.steps[1:] {
		q = q.child("(" + s + ")")
	}
	sc.inPayload++
	sc.content(q, bytes.NewReader(pl.data), int64(len(pl.data)), "", 1)
	sc.inPayload--
}

// sourceRunners are the globals that run a string as Python source.
var sourceRunners = map[string]bool{
	"builtins.exec": true, "builtins.eval": true, "builtins.compile": true, "__builtin__.exec": true,
	"__builtin__.eval": true, "__builtin__.compile": true, "__builtin__.execfile": true,
	"code.InteractiveInterpreter.runsource": true, "code.InteractiveInterpreter.runcode": true,
	"code.InteractiveConsole.push": true, "code.InteractiveConsole.runsource": true, "code.compile_command": true,
	"codeop.compile_command": true, "timeit.timeit": true, "timeit.repeat": true, "timeit.Timer": true,
	"cProfile.run": true, "cProfile.runctx": true, "profile.run": true, "profile.runctx": true,
	"pdb.run": true, "pdb.runeval": true,
}

// decoders are the globals that turn a constant into bytes or text, by the
// encoding they undo ("" for codecs.decode, whose second argument says).
var decoders = map[string]string{
	"base64.b64decode": "base64", "base64.standard_b64decode": "base64", "base64.urlsafe_b64decode": "base64",
	"base64.decodebytes": "base64", "base64.decodestring": "base64", "binascii.a2b_base64": "base64",
	"base64.b16decode": "hex", "binascii.unhexlify": "hex", "binascii.a2b_hex": "hex", "builtins.bytes.fromhex": "hex",
	"bytes.fromhex": "hex", "builtins.bytearray.fromhex": "hex",
	"zlib.decompress": "zlib", "gzip.decompress": "gzip", "bz2.decompress": "bzip2", "lzma.decompress": "lzma",
	"codecs.decode": "", "_codecs.decode": "",
}

// resolveCode follows a call's argument back to its constant through
// decoder calls: the bytes it gives, the decoders applied (outermost
// last), and the constant's offset.
func resolveCode(w *pickle.Walker, v *pickle.Value, depth int) (data []byte, steps []string, off int64, ok bool) {
	if v == nil || depth > 8 {
		return nil, nil, 0, false
	}
	switch v.Kind {
	case pickle.KStr, pickle.KBytes:
		return []byte(v.Str), nil, v.Int, true
	case pickle.KObject:
		gs := w.Result().Globals
		if v.Global < 0 || v.Global >= len(gs) || v.Args == nil || len(v.Args.Items) == 0 {
			return nil, nil, 0, false
		}
		g := gs[v.Global]
		enc, isDec := decoders[g.Module+"."+g.Name]
		if !isDec {
			return nil, nil, 0, false
		}
		in, steps, off, ok := resolveCode(w, v.Args.Items[0], depth+1)
		if !ok {
			return nil, nil, 0, false
		}
		if enc == "" { // codecs.decode(obj, encoding)
			enc = "utf-8"
			if len(v.Args.Items) > 1 && v.Args.Items[1].Kind == pickle.KStr {
				enc = strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(v.Args.Items[1].Str))
			}
		}
		out, name, ok := decodeAs(enc, in)
		if !ok {
			return nil, nil, 0, false
		}
		return out, append(steps, name), off, true
	}
	return nil, nil, 0, false
}

// decodeAs undoes one named encoding.
func decodeAs(enc string, in []byte) ([]byte, string, bool) {
	switch enc {
	case "base64", "base64codec":
		out, ok := base64Text(in)
		if !ok {
			out, ok = base64Short(in)
		}
		return out, "base64", ok
	case "hex", "hexcodec":
		out, err := hex.DecodeString(string(stripSpace(in)))
		return out, "hex", err == nil
	case "rot13":
		return []byte(strings.Map(rot13, string(in))), "rot13", true
	case "utf8", "ascii", "latin1", "unicodeescape", "rawunicodeescape":
		return in, enc, true
	case "zlib", "zlibcodec", "gzip", "bzip2", "bz2", "bz2codec", "lzma":
		name, out, ok := peel(in)
		return out, name, ok
	}
	return nil, "", false
}

func base64Short(in []byte) ([]byte, bool) {
	out, err := base64.StdEncoding.DecodeString(string(stripSpace(in)))
	return out, err == nil
}

func rot13(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z':
		return 'a' + (r-'a'+13)%26
	case r >= 'A' && r <= 'Z':
		return 'A' + (r-'A'+13)%26
	}
	return r
}

// codeCall is called at every call a pickle makes: exec(), eval() and the
// other source runners have their argument followed back through decoder
// calls to its constant, and the source read.
func (sc *scan) codeCall(p place, w *pickle.Walker, g int, args *pickle.Value) {
	gl := w.Result().Globals[g]
	qual := gl.Module + "." + gl.Name
	if !sourceRunners[qual] || args == nil || args.Kind != pickle.KTuple || len(args.Items) == 0 {
		return
	}
	data, steps, off, ok := resolveCode(w, args.Items[0], 0)
	if !ok || len(data) == 0 {
		return
	}
	chain := "a constant"
	if len(steps) > 0 {
		chain = "a constant decoded by " + strings.Join(steps, " → ")
	}
	where := fmt.Sprintf("the Python source %s calls (%s at byte %d)", qual, chain, off)
	if f := sniff(data, int64(len(data)), ""); f != fmtUnknown {
		sc.nestedPayload(p, fmt.Sprintf("%s argument, %s at byte %d", qual, chain, off), payload{steps: []string{""}, data: data, f: f})
		return
	}
	sc.source(p, where, string(data), scanners.SeverityCritical, 0)
}

// source reports what Python source hidden in a model imports and calls,
// when it is dangerous, at most sev; string literals in it are peeled and
// looked into in turn (multi-stage payloads), maxPeel levels deep.
func (sc *scan) source(p place, where, src string, sev scanners.Severity, depth int) {
	if !utf8.ValidString(src) || depth > maxPeel {
		return
	}
	refs, strs, _ := sourceRefs(src)
	var bad []string
	top := scanners.Severity(0)
	for _, r := range refs {
		v := sc.s.cls.classify(r.module, r.name)
		if v.tier != tierDangerous {
			continue
		}
		q := r.module
		if r.name != "" {
			q += "." + r.name
		}
		how := "imports"
		if r.call {
			how = "calls"
		}
		if e := fmt.Sprintf("%s %s (line %d)", how, q, r.line); len(bad) < 8 && !strings.Contains(strings.Join(bad, "\x00"), how+" "+q+" ") {
			bad = append(bad, e)
		}
		top = max(top, min(v.sev, sev))
	}
	if len(bad) > 0 {
		sc.add(ruleEmbeddedCode, top,
			fmt.Sprintf("%s%s is Python code that %s. %s %s", upperFirst(where), p.in(), strings.Join(bad, ", "), embeddedWhy(sev), ruleEmbeddedCode.Fix),
			fmt.Sprintf("%s%s: %s", where, p.in(), strings.Join(bad, ", ")))
	}
	for _, t := range strs {
		if len(t.val) < 16 {
			continue
		}
		pl, ok := unwrap([]byte(t.val))
		if !ok {
			continue
		}
		inner := fmt.Sprintf("%s in a string at line %d of %s", strings.Join(pl.steps, " → "), t.line, where)
		if pl.f != fmtUnknown {
			sc.nestedPayload(p, inner, pl)
			continue
		}
		sc.source(p, inner, string(pl.data), sev, depth+1)
	}
}

func embeddedWhy(sev scanners.Severity) string {
	if sev >= scanners.SeverityCritical {
		return "The pickle runs it when it is loaded."
	}
	return "Nothing in the format runs it by itself, but code is never needed there: a loader or a later stage that evaluates it runs it."
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
