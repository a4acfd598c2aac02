package models

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Element sizes in bits of the safetensors dtypes.
var safetensorsBits = map[string]int64{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16,
	"F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "F64": 64, "I64": 64, "U64": 64,
	"C64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

type stTensor struct {
	name    string
	Dtype   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// safetensors validates the header the way the safetensors library does:
// length, JSON, dtypes, shapes against offsets, offsets inside the data,
// tensors contiguous and not overlapping, data size equal to the file's.
// The __metadata__ strings go to the strings scanner. The header is decoded
// one entry at a time from the file (never whole, never into a map), each
// tensor kept as its name and offsets, at most Limits.MaxEntries of them.
func (sc *scan) safetensors(p place, ra io.ReaderAt, size int64) {
	bad := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		sc.add(ruleSafetensors, ruleSafetensors.Severity, fmt.Sprintf("safetensors file%s: %s. %s", p.in(), msg, ruleSafetensors.Fix), msg)
	}
	h := make([]byte, 8)
	if _, err := ra.ReadAt(h, 0); err != nil {
		bad("cannot read the header length")
		return
	}
	n := int64(binary.LittleEndian.Uint64(h))
	if n <= 0 || n > 100<<20 || n > size-8 {
		bad("header length %d does not fit the file (%d bytes) or the 100 MB limit", n, size)
		return
	}
	hdr := func() *json.Decoder {
		return json.NewDecoder(bufio.NewReaderSize(io.NewSectionReader(ra, 8, n), 64<<10))
	}
	if dup := duplicateKey(hdr(), sc.s.lim.MaxEntries); dup != "" {
		bad("header has the key %q twice; readers keep different copies", dup)
	}
	dec := hdr()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		bad("header is not a JSON object")
		return
	}
	dataLen := size - 8 - n
	var ts []stTensor
	for entries := 0; dec.More(); entries++ {
		if entries >= sc.s.lim.MaxEntries {
			sc.limit("tensor limit", p, fmt.Sprintf("safetensors file%s has more than %d header entries: the rest of its header was not checked.", p.in(), sc.s.lim.MaxEntries))
			return
		}
		kt, err := dec.Token()
		if err != nil {
			bad("header is not a JSON object: %v", err)
			return
		}
		k, _ := kt.(string)
		if k == "__metadata__" {
			var md map[string]string
			if err := dec.Decode(&md); err != nil {
				bad("__metadata__ is not a map of strings")
				if !typeError(err) {
					return
				}
				continue
			}
			var b strings.Builder
			keys := make([]string, 0, len(md))
			for mk := range md {
				keys = append(keys, mk)
			}
			sort.Strings(keys)
			for _, mk := range keys {
				fmt.Fprintf(&b, "%s: %s\n", mk, md[mk])
				sc.metadataValue(p, mk, md[mk])
			}
			sc.metaLicense(p, "safetensors __metadata__ license", md["license"])
			sc.strings(p, "safetensors __metadata__", []byte(b.String()))
			continue
		}
		var t stTensor
		if err := dec.Decode(&t); err != nil {
			bad("tensor %q has a bad entry: %v", k, err)
			if !typeError(err) {
				return // broken JSON: the decoder cannot go on
			}
			continue
		}
		t.name = k
		bits, ok := safetensorsBits[t.Dtype]
		if !ok {
			bad("tensor %q has unknown dtype %q", k, t.Dtype)
			continue
		}
		if len(t.Offsets) != 2 || t.Offsets[0] < 0 || t.Offsets[1] < t.Offsets[0] || t.Offsets[1] > dataLen {
			bad("tensor %q has data_offsets %v outside the %d bytes of data", k, t.Offsets, dataLen)
			continue
		}
		elems := int64(1)
		overflow := false
		for _, d := range t.Shape {
			if d < 0 || (d > 0 && elems > (1<<60)/d) {
				overflow = true
				break
			}
			elems *= d
		}
		if overflow {
			bad("tensor %q has a bad shape %v", k, t.Shape)
			continue
		}
		if want := (elems*bits + 7) / 8; want != t.Offsets[1]-t.Offsets[0] {
			bad("tensor %q: shape %v of %s needs %d bytes, data_offsets give %d", k, t.Shape, t.Dtype, want, t.Offsets[1]-t.Offsets[0])
		}
		t.Shape, t.Dtype = nil, ""
		ts = append(ts, t)
	}
	if _, err := dec.Token(); err != nil {
		bad("header is not a JSON object: %v", err)
		return
	}
	if !onlySpaces(ra, 8+dec.InputOffset(), 8+n) {
		bad("header has data after its JSON object")
	}
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Offsets[0] != ts[j].Offsets[0] {
			return ts[i].Offsets[0] < ts[j].Offsets[0]
		}
		return ts[i].name < ts[j].name
	})
	end := int64(0)
	for _, t := range ts {
		if t.Offsets[0] < end {
			bad("tensor %q overlaps the tensor before it (offset %d < %d)", t.name, t.Offsets[0], end)
		} else if t.Offsets[0] > end {
			bad("%d bytes before tensor %q belong to no tensor", t.Offsets[0]-end, t.name)
		}
		if t.Offsets[1] > end {
			end = t.Offsets[1]
		}
	}
	if end != dataLen && len(ts) > 0 {
		bad("the tensors cover %d bytes but the file holds %d bytes of data", end, dataLen)
	}
}

// typeError reports whether a decoding error left the decoder after the
// value (a value of the wrong type), so that it can go on.
func typeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// onlySpaces reports whether ra holds only spaces from off to end (the
// padding the safetensors writer adds to a header).
func onlySpaces(ra io.ReaderAt, off, end int64) bool {
	buf := make([]byte, 64<<10)
	for off < end {
		n, err := ra.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if len(bytes.Trim(buf[:n], " ")) > 0 || n == 0 && err != nil {
			return false
		}
		off += int64(n)
	}
	return true
}

// duplicateKey returns a top-level key that occurs twice in a JSON object.
// It looks at the first max keys.
func duplicateKey(dec *json.Decoder, max int) string {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() && len(seen) < max {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		k, _ := t.(string)
		if seen[k] {
			return k
		}
		seen[k] = true
		if err := skipJSON(dec); err != nil {
			return ""
		}
	}
	return ""
}

// skipJSON reads one value token by token, holding no more than a token.
func skipJSON(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// metadataValue looks inside one __metadata__ string: safetensors never
// evaluates it, so a pickle or code there is a payload waiting for a
// loader that does (or a stage of a larger attack). A pickle (raw or
// encoded) is walked; Python source (raw or encoded) that imports or calls
// dangerous functions is reported, high.
func (sc *scan) metadataValue(p place, key, v string) {
	where := fmt.Sprintf("safetensors __metadata__ %q", key)
	if len(v) >= 4 && sniff([]byte(v), int64(len(v)), "") == fmtPickle {
		sc.nestedPayload(p, where, payload{steps: []string{""}, data: []byte(v), f: fmtPickle})
		return
	}
	if pl, ok := unwrap([]byte(v)); ok {
		if pl.f != fmtUnknown {
			sc.nestedPayload(p, fmt.Sprintf("%s in %s", pl.steps[0], where), pl)
			return
		}
		sc.source(p, fmt.Sprintf("the %s-decoded value of %s", strings.Join(pl.steps, " → "), where), string(pl.data), scanners.SeverityHigh, 0)
		return
	}
	if _, _, statements := sourceRefs(v); statements {
		sc.source(p, "the value of "+where, v, scanners.SeverityHigh, 0)
	}
}
