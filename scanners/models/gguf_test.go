package models

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// ggufFile writes a GGUF v3 file with string key/values and one F32 tensor
// of 4 elements at offset off (0 by default), padded as the spec says.
func ggufFile(kv [][2]string, dims []uint64, off ...uint64) []byte {
	var b bytes.Buffer
	u32 := func(v uint32) { binary.Write(&b, binary.LittleEndian, v) }
	u64 := func(v uint64) { binary.Write(&b, binary.LittleEndian, v) }
	str := func(s string) { u64(uint64(len(s))); b.WriteString(s) }
	b.WriteString("GGUF")
	u32(3)
	u64(1)
	u64(uint64(len(kv)))
	for _, e := range kv {
		str(e[0])
		u32(8)
		str(e[1])
	}
	str("w")
	u32(uint32(len(dims)))
	for _, d := range dims {
		u64(d)
	}
	u32(0)
	u64(append(off, 0)[0])
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	b.Write(make([]byte, 16))
	return b.Bytes()
}

func scanGGUF(t *testing.T, data []byte) []scanners.Finding {
	t.Helper()
	fs, err := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "m.gguf"}, data)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestGGUFSeverity: a truncated or inconsistent GGUF file is medium (it
// carries no code and loaders refuse it); values that overflow a parser's
// arithmetic are high; a chat template cut by the truncation is still
// checked; padding the spec allows is quiet.
func TestGGUFSeverity(t *testing.T) {
	tmpl := [2]string{"tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}"}
	good := ggufFile([][2]string{{"general.architecture", "llama"}, tmpl}, []uint64{4})
	evil := ggufFile([][2]string{{"general.architecture", "llama"}, {"tokenizer.chat_template", "{{ lipsum.__globals__.os.popen('true') }}" + strings.Repeat(" ", 64)}}, []uint64{4})
	cut := bytes.Index(evil, []byte("popen")) + 10
	overflowCount := slices.Clone(good)
	binary.LittleEndian.PutUint64(overflowCount[16:], 1<<62) // key/value count
	manyDims := ggufFile([][2]string{tmpl}, []uint64{1, 1, 1, 1, 1, 1})
	bigDims := ggufFile([][2]string{tmpl}, []uint64{1 << 40, 1 << 40})
	unaligned := ggufFile([][2]string{tmpl}, []uint64{4}, 3)
	cases := []struct {
		name string
		data []byte
		want map[string]scanners.Severity // rule → highest severity
	}{
		{"valid", good, nil},
		{"valid, no padding after the data", good[:len(good)-4], nil},
		{"truncated in the tensor infos", good[:len(good)-16-40], map[string]scanners.Severity{"models/gguf-malformed": scanners.SeverityMedium}},
		{"truncated in the header", good[:30], map[string]scanners.Severity{"models/gguf-malformed": scanners.SeverityMedium}},
		{"template cut by the truncation", evil[:cut], map[string]scanners.Severity{"models/gguf-malformed": scanners.SeverityMedium, "models/gguf-template-injection": scanners.SeverityCritical}},
		{"unaligned tensor offset", unaligned, map[string]scanners.Severity{"models/gguf-malformed": scanners.SeverityMedium}},
		{"count overflows", overflowCount, map[string]scanners.Severity{"models/gguf-malformed": scanners.SeverityHigh}},
		{"more than GGML_MAX_DIMS", manyDims, map[string]scanners.Severity{"models/gguf-malformed": scanners.SeverityHigh}},
		{"dimension product overflows", bigDims, map[string]scanners.Severity{"models/gguf-malformed": scanners.SeverityHigh}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]scanners.Severity{}
			for _, f := range scanGGUF(t, c.data) {
				got[f.RuleID] = max(got[f.RuleID], f.Severity)
			}
			if len(got) != len(c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			for r, s := range c.want {
				if got[r] != s {
					t.Errorf("%s: %v, want %v (all: %v)", r, got[r], s, got)
				}
			}
		})
	}
}
