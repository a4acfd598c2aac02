package models

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Jinja reaching into Python internals: dunder attributes (also spelled
// with escapes or through |attr), the globals Jinja exposes that lead to
// them, and direct names of code runners.
var reTemplateEscape = regexp.MustCompile(`__[A-Za-z]\w*__|\\x5f\\x5f|\\u005f|\|\s*attr\s*\(|\blipsum\b|\bcycler\b|\bjoiner\b|\.mro\b|\b__import__\b|\bpopen\b|\bsubprocess\b|\bos\.system\b|\beval\s*\(|\bexec\s*\(|_TemplateReference__context|\bself\._`)

// ggufReader reads GGUF values with bounds against the file size.
type ggufReader struct {
	r    *bufio.Reader
	pos  int64
	size int64
	v1   bool
}

var errGGUFBounds = errors.New("length runs past the end of the file")

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

func (g *ggufReader) str(keep int) (string, error) {
	n, err := g.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(g.size-g.pos) {
		return "", errGGUFBounds
	}
	k := n
	if k > uint64(keep) {
		k = uint64(keep)
	}
	b := make([]byte, k)
	if err := g.read(b); err != nil {
		return "", err
	}
	if rest := int64(n - k); rest > 0 {
		d, err := g.r.Discard(int(rest))
		g.pos += int64(d)
		if err != nil {
			return "", err
		}
	}
	return string(b), nil
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
			if n > uint64(g.size-g.pos)/uint64(sz) {
				return nil, errGGUFBounds
			}
			total := int64(n) * sz
			for total > 0 {
				c := total
				if c > 1<<30 {
					c = 1 << 30
				}
				d, err := g.r.Discard(int(c))
				g.pos += int64(d)
				total -= int64(d)
				if err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
		if n > uint64(g.size-g.pos)/8 {
			return nil, errGGUFBounds
		}
		for i := uint64(0); i < n; i++ {
			if _, err := g.value(et, depth+1); err != nil { // token lists: not kept
				return nil, err
			}
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown value type %d", t)
}

// gguf reads a GGUF header: every key/value with bounds, the chat
// templates checked for Jinja that escapes to Python, string values handed
// to the strings scanner, tensor infos checked against the file.
func (sc *scan) gguf(p place, ra io.ReaderAt, size int64) {
	bad := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		sc.add(ruleGGUFMalformed, ruleGGUFMalformed.Severity, fmt.Sprintf("GGUF file%s: %s. %s", p.in(), msg, ruleGGUFMalformed.Fix), msg)
	}
	g := &ggufReader{r: bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), 64<<10), size: size}
	var magic [4]byte
	if g.read(magic[:]) != nil {
		return
	}
	ver, err := g.u32()
	if err != nil || ver < 1 || ver > 3 {
		bad("unknown version %d", ver)
		return
	}
	g.v1 = ver == 1
	nt, err1 := g.u64()
	nkv, err2 := g.u64()
	if err1 != nil || err2 != nil {
		bad("truncated header")
		return
	}
	if nkv > uint64(size)/8 || nt > uint64(size)/8 {
		bad("%d key/values and %d tensors cannot fit in %d bytes", nkv, nt, size)
		return
	}
	var strs strings.Builder
	alignment := uint64(32)
	for i := uint64(0); i < nkv; i++ {
		key, err := g.str(4096)
		if err != nil {
			bad("key/value %d: key: %v", i, err)
			return
		}
		t, err := g.u32()
		if err != nil {
			bad("key %q: truncated", key)
			return
		}
		if key == "general.alignment" && t == 4 {
			var b [4]byte
			if g.read(b[:]) != nil {
				bad("key %q: truncated", key)
				return
			}
			alignment = uint64(binary.LittleEndian.Uint32(b[:]))
			if alignment == 0 || alignment&(alignment-1) != 0 {
				bad("general.alignment %d is not a power of two", alignment)
				alignment = 32
			}
			continue
		}
		vals, err := g.value(t, 0)
		if err != nil {
			bad("key %q: %v", key, err)
			return
		}
		for _, v := range vals {
			if strings.HasPrefix(key, "tokenizer.chat_template") {
				if m := reTemplateEscape.FindString(v); m != "" {
					sc.add(ruleGGUFTemplate, ruleGGUFTemplate.Severity,
						fmt.Sprintf("GGUF key %s%s is a Jinja template that uses %q, which reaches Python internals when a runtime renders it without a sandbox (CVE-2024-34359). %s", key, p.in(), m, ruleGGUFTemplate.Fix),
						fmt.Sprintf("%s uses %q", key, m))
				}
			}
			if len(v) >= 8 && strs.Len() < 4<<20 {
				strs.WriteString(key)
				strs.WriteString(": ")
				strs.WriteString(v)
				strs.WriteByte('\n')
			}
		}
	}
	for i := uint64(0); i < nt; i++ {
		name, err := g.str(4096)
		if err != nil {
			bad("tensor info %d: %v", i, err)
			break
		}
		nd, err := g.u32()
		if err != nil || nd > 8 {
			bad("tensor %q has %d dimensions", name, nd)
			break
		}
		for d := uint32(0); d < nd; d++ {
			if _, err := g.u64(); err != nil {
				bad("tensor %q: truncated", name)
				break
			}
		}
		if _, err := g.u32(); err != nil {
			bad("tensor %q: truncated", name)
			break
		}
		off, err := g.u64()
		if err != nil {
			bad("tensor %q: truncated", name)
			break
		}
		if off%alignment != 0 || off > uint64(size) {
			bad("tensor %q has offset %d (unaligned or past the end of the file)", name, off)
		}
	}
	sc.strings(p, "GGUF metadata", []byte(strs.String()))
}
