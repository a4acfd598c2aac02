package models

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// ggufReader reads GGUF values with bounds against the file size.
type ggufReader struct {
	r    *bufio.Reader
	pos  int64
	size int64
	v1   bool
}

// errGGUFBounds: a length or count runs past the end of the file, which is
// what a truncated download looks like.
var errGGUFBounds = errors.New("length runs past the end of the file")

// errGGUFOverflow: a length or count so large that multiplying it by its
// element size overflows 64 bits, which is how crafted files corrupt the
// memory of parsers that trust it (the integer overflows in llama.cpp's
// gguf_init, CVE-2024-21802 and its siblings); no writer produces one.
var errGGUFOverflow = errors.New("length or count overflows 64 bits when multiplied by its element size")

func (g *ggufReader) read(b []byte) error {
	n, err := io.ReadFull(g.r, b)
	g.pos += int64(n)
	return err
}

func (g *ggufReader) u32() (uint32, error) {
	var b [4]byte
	err := g.read(b[:])
	return binary.LittleEndian.Uint32(b[:]), err
}

func (g *ggufReader) u64() (uint64, error) {
	if g.v1 {
		v, err := g.u32()
		return uint64(v), err
	}
	var b [8]byte
	err := g.read(b[:])
	return binary.LittleEndian.Uint64(b[:]), err
}

// str reads a string, keeping its first keep bytes. A string whose length
// runs past the end of the file returns what is there with errGGUFBounds
// (a truncated chat template is still checked).
func (g *ggufReader) str(keep int) (string, error) {
	n, err := g.u64()
	if err != nil {
		return "", err
	}
	if n >= math.MaxInt64 {
		return "", errGGUFOverflow
	}
	var bounds error
	if n > uint64(g.size-g.pos) {
		n, bounds = uint64(g.size-g.pos), errGGUFBounds
	}
	k := min(n, uint64(keep))
	b := make([]byte, k)
	if err := g.read(b); err != nil {
		return string(b), err
	}
	if rest := int64(n - k); rest > 0 {
		d, err := g.r.Discard(int(rest))
		g.pos += int64(d)
		if err != nil {
			return string(b), err
		}
	}
	return string(b), bounds
}

var ggufScalarSize = map[uint32]int64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

// value reads one value of type t; strings are returned (kept up to 1 MiB).
func (g *ggufReader) value(t uint32, depth int) ([]string, error) {
	if sz, ok := ggufScalarSize[t]; ok {
		d, err := g.r.Discard(int(sz))
		g.pos += int64(d)
		return nil, err
	}
	switch t {
	case 8:
		s, err := g.str(1 << 20)
		return []string{s}, err
	case 9:
		if depth > 2 {
			return nil, errors.New("arrays nested too deep")
		}
		et, err := g.u32()
		if err != nil {
			return nil, err
		}
		n, err := g.u64()
		if err != nil {
			return nil, err
		}
		if sz, ok := ggufScalarSize[et]; ok {
			if hi, _ := bits.Mul64(n, uint64(sz)); hi != 0 {
				return nil, errGGUFOverflow
			}
			if n > uint64(g.size-g.pos)/uint64(sz) {
				return nil, errGGUFBounds
			}
			total := int64(n) * sz
			for total > 0 {
				c := min(total, 1<<30)
				d, err := g.r.Discard(int(c))
				g.pos += int64(d)
				total -= int64(d)
				if err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
		if hi, _ := bits.Mul64(n, 8); hi != 0 {
			return nil, errGGUFOverflow
		}
		if n > uint64(g.size-g.pos)/8 {
			return nil, errGGUFBounds
		}
		var out []string
		for i := uint64(0); i < n; i++ {
			vs, err := g.value(et, depth+1) // token lists: not kept
			if et == 9 {
				out = append(out, vs...) // nested string arrays (named templates)
			}
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown value type %d", t)
}

// ggufMaxDims is GGML_MAX_DIMS: a tensor with more dimensions writes past
// the dimension array of parsers that trust the count.
const ggufMaxDims = 4

// gguf reads a GGUF header: every key/value with bounds, the chat
// templates parsed as Jinja and checked for escapes to Python, string
// values handed to the strings scanner, tensor infos checked against the
// file.
//
// What is wrong with a GGUF file is ranked by what it can do. A GGUF file
// holds no code: only its chat template is ever run, and that is checked
// for itself. A length, count or offset past the end of the file, an
// unknown version or value type, or an unaligned offset is what a
// truncated or inconsistent file looks like; loaders refuse it, so it is
// medium. Values that overflow a parser's arithmetic (counts times element
// sizes past 64 bits, more than GGML_MAX_DIMS dimensions, dimensions whose
// product overflows) are how crafted files corrupt memory in loaders that
// trust them, so they are high.
func (sc *scan) gguf(p place, ra io.ReaderAt, size int64) {
	bad := func(sev scanners.Severity, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		why := "loaders refuse such a file, and it carries no code by itself (a truncated download looks like this)"
		if sev >= scanners.SeverityHigh {
			why = "no writer produces such values; they overflow the arithmetic of parsers that trust them (memory corruption in GGUF loaders, CVE-2024-21802 and siblings)"
		}
		sc.add(ruleGGUFMalformed, sev, fmt.Sprintf("GGUF file%s: %s: %s. %s", p.in(), msg, why, ruleGGUFMalformed.Fix), msg)
	}
	sevOf := func(err error) scanners.Severity {
		if errors.Is(err, errGGUFOverflow) {
			return scanners.SeverityHigh
		}
		return scanners.SeverityMedium
	}
	g := &ggufReader{r: bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), 64<<10), size: size}
	var magic [4]byte
	if g.read(magic[:]) != nil {
		return
	}
	ver, err := g.u32()
	if err != nil || ver < 1 || ver > 3 {
		bad(scanners.SeverityMedium, "unknown version %d", ver)
		return
	}
	g.v1 = ver == 1
	nt, err1 := g.u64()
	nkv, err2 := g.u64()
	if err1 != nil || err2 != nil {
		bad(scanners.SeverityMedium, "truncated header")
		return
	}
	if nkv >= 1<<60 || nt >= 1<<58 {
		bad(scanners.SeverityHigh, "%d key/values and %d tensors overflow 64 bits when multiplied by the size of their entries", nkv, nt)
		return
	}
	if nkv > uint64(size)/8 || nt > uint64(size)/8 {
		bad(scanners.SeverityMedium, "%d key/values and %d tensors cannot fit in %d bytes", nkv, nt, size)
		// Read on: the key/values that are there (the chat template) are
		// still checked.
	}
	var strs strings.Builder
	alignment := uint64(32)
	for i := uint64(0); i < nkv; i++ {
		key, err := g.str(4096)
		if err != nil {
			if g.pos >= size && i > 0 && nkv > uint64(size)/8 {
				return // the count was already reported
			}
			bad(sevOf(err), "key/value %d: key: %v", i, err)
			return
		}
		t, err := g.u32()
		if err != nil {
			bad(scanners.SeverityMedium, "key %q: truncated", key)
			return
		}
		if key == "general.alignment" && t == 4 {
			var b [4]byte
			if g.read(b[:]) != nil {
				bad(scanners.SeverityMedium, "key %q: truncated", key)
				return
			}
			alignment = uint64(binary.LittleEndian.Uint32(b[:]))
			if alignment == 0 || alignment&(alignment-1) != 0 {
				bad(scanners.SeverityMedium, "general.alignment %d is not a power of two", alignment)
				alignment = 32
			}
			continue
		}
		vals, err := g.value(t, 0)
		if key == "general.license" && t == 8 && len(vals) == 1 {
			sc.metaLicense(p, "GGUF general.license", vals[0])
		}
		for _, v := range vals {
			switch {
			case strings.HasPrefix(key, "tokenizer.chat_template"):
				sc.chatTemplate(p, ruleGGUFTemplate, "GGUF key "+key, v, tmplChat)
			case strings.Contains(key, "template") && hasJinjaTag(v):
				// A template under another key (a tool or RAG template a
				// runtime or wrapper reads).
				sc.chatTemplate(p, ruleGGUFTemplate, "GGUF key "+key, v, tmplValue)
			}
			if len(v) >= 8 && strs.Len() < 4<<20 {
				strs.WriteString(key)
				strs.WriteString(": ")
				strs.WriteString(v)
				strs.WriteByte('\n')
			}
		}
		if err != nil {
			bad(sevOf(err), "key %q: %v", key, err)
			sc.strings(p, "GGUF metadata", []byte(strs.String()))
			return
		}
	}
	sc.strings(p, "GGUF metadata", []byte(strs.String()))
	for i := uint64(0); i < nt; i++ {
		name, err := g.str(4096)
		if err != nil {
			bad(sevOf(err), "tensor info %d: %v", i, err)
			return
		}
		nd, err := g.u32()
		if err != nil {
			bad(scanners.SeverityMedium, "tensor %q: truncated", name)
			return
		}
		if nd > ggufMaxDims {
			bad(scanners.SeverityHigh, "tensor %q has %d dimensions, more than GGML_MAX_DIMS (%d)", name, nd, ggufMaxDims)
			return
		}
		elems, overflow := uint64(1), false
		for d := uint32(0); d < nd; d++ {
			n, err := g.u64()
			if err != nil {
				bad(scanners.SeverityMedium, "tensor %q: truncated", name)
				return
			}
			hi, lo := bits.Mul64(elems, n)
			overflow = overflow || hi != 0 || lo > math.MaxInt64
			elems = lo
		}
		if overflow {
			bad(scanners.SeverityHigh, "tensor %q has dimensions whose product overflows 64 bits", name)
		}
		if _, err := g.u32(); err != nil {
			bad(scanners.SeverityMedium, "tensor %q: truncated", name)
			return
		}
		off, err := g.u64()
		if err != nil {
			bad(scanners.SeverityMedium, "tensor %q: truncated", name)
			return
		}
		if off%alignment != 0 || off > uint64(size) {
			bad(scanners.SeverityMedium, "tensor %q has offset %d (unaligned or past the end of the file)", name, off)
		}
	}
}
