package pickle

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

func sbu(s string) string { return "\x8c" + string(rune(len(s))) + s }

func names(r *Result) []string {
	var out []string
	for _, g := range r.Globals {
		out = append(out, g.Module+"."+g.Name)
	}
	return out
}

func TestWalk(t *testing.T) {
	cases := []struct {
		name    string
		data    string
		globals []string
		called  bool
		kinds   []ProblemKind
		streams int
	}{
		{"proto0 global reduce", "cos\nsystem\n(S'true'\ntR.", []string{"os.system"}, true, nil, 1},
		{"proto2 newobj", "\x80\x02cmod\nCls\n)\x81.", []string{"mod.Cls"}, true, nil, 1},
		{"stack global from memo", "\x80\x04" + sbu("posix") + "\x94" + sbu("x") + "0h\x00" + sbu("system") + "\x93)R.", []string{"posix.system"}, true, nil, 1},
		{"memo desync", "\x80\x04" + sbu("posix") + sbu("decoy") + "0\x940h\x00" + sbu("system") + "\x93)R.", []string{"posix.system"}, true, nil, 1},
		{"inst", "(S'true'\nios\nsystem\n.", []string{"os.system"}, true, nil, 1},
		{"obj", "(cos\nsystem\nS'x'\no0N.", []string{"os.system"}, true, nil, 1},
		{"newobj_ex", "\x80\x04" + sbu("types") + sbu("CodeType") + "\x93)}\x92.", []string{"types.CodeType"}, true, nil, 1},
		{"build ties", "\x80\x02cmod\nCls\n)\x81}b.", []string{"mod.Cls"}, true, nil, 1},
		{"ext1", "\x80\x02\x82\x05)R.", []string{"copyreg extension.5"}, true, nil, 1},
		{"long_binput/get", "\x80\x02X\x02\x00\x00\x00osr\x00\x01\x00\x000j\x00\x01\x00\x00X\x06\x00\x00\x00system\x93.", []string{"os.system"}, false, nil, 1},
		{"truncated", "\x80\x02cos\nsystem\n(X\xff\x00\x00\x00ab", []string{"os.system"}, false, []ProblemKind{Malformed}, 1},
		{"unknown opcode", "\x80\x02cos\nsystem\n\xff.", []string{"os.system"}, false, []ProblemKind{Malformed}, 1},
		{"trailing", "\x80\x02N.\x80\x02cos\nsystem\n.", []string{"os.system"}, false, []ProblemKind{Trailing}, 2},
		{"underflow keeps going", "\x80\x02R0cos\nsystem\n.", []string{"os.system"}, false, []ProblemKind{Malformed, Malformed}, 1},
		{"get unknown key", "\x80\x02h\x07.", nil, false, []ProblemKind{Malformed}, 1},
		{"frame crossing", "\x80\x04\x95\x02\x00\x00\x00\x00\x00\x00\x00B\x03\x00\x00\x00abc.", nil, false, []ProblemKind{Frame}, 1},
		{"proto late", "N\x80\x02.", nil, false, []ProblemKind{Protocol}, 1},
		{"dynamic operands", "\x80\x04cop\nadd\n" + sbu("po") + sbu("six") + "\x86R" + sbu("system") + "\x93.", []string{"op.add", "<result of a call>.system"}, true, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Walk(strings.NewReader(c.data), Limits{})
			if got := names(r); !slices.Equal(got, c.globals) {
				t.Errorf("globals %v, want %v", got, c.globals)
			}
			if c.called && (len(r.Globals) == 0 || len(r.Globals[0].Calls) == 0) {
				t.Errorf("call not tied to %v", names(r))
			}
			var kinds []ProblemKind
			for _, p := range r.Problems {
				kinds = append(kinds, p.Kind)
			}
			if !slices.Equal(kinds, c.kinds) {
				t.Errorf("problems %+v, want kinds %v", r.Problems, c.kinds)
			}
			if r.Streams != c.streams {
				t.Errorf("streams %d, want %d", r.Streams, c.streams)
			}
		})
	}
}

func TestLimitsBound(t *testing.T) {
	// A memo bomb: MEMOIZE in a loop.
	data := "\x80\x04N" + strings.Repeat("\x94", 1000) + "."
	r := Walk(strings.NewReader(data), Limits{MaxMemo: 10})
	if len(r.Problems) == 0 || !strings.Contains(r.Problems[0].Msg, "memo") {
		t.Errorf("memo limit not reported: %+v", r.Problems)
	}
	// A deep stack.
	r = Walk(strings.NewReader("\x80\x04"+strings.Repeat("N", 100)+"."), Limits{MaxStack: 10})
	if len(r.Problems) == 0 || !strings.Contains(r.Problems[0].Msg, "stack") {
		t.Errorf("stack limit not reported: %+v", r.Problems)
	}
	// A huge declared string is skipped, not allocated.
	var b bytes.Buffer
	b.WriteString("\x80\x04\x8d")
	binary.Write(&b, binary.LittleEndian, uint64(1<<40))
	r = Walk(&b, Limits{})
	if len(r.Problems) == 0 || !strings.Contains(r.Problems[0].Msg, "truncated") {
		t.Errorf("huge string: %+v", r.Problems)
	}
}

func TestStrings(t *testing.T) {
	r := Walk(strings.NewReader("\x80\x02X\x0c\x00\x00\x00hello world!q\x00."), Limits{})
	if len(r.Strings) != 1 || r.Strings[0].Value != "hello world!" || r.Strings[0].Offset != 2 {
		t.Errorf("strings %+v", r.Strings)
	}
}

// bigList builds the pickle CPython writes (protocol 4, no frames) for
// [{'id': i, 'name': 'n<i>'} for i in range(n)].
func bigList(n int) []byte {
	var b bytes.Buffer
	b.WriteString("\x80\x04]\x94(")
	memo := 1
	for i := 0; i < n; i++ {
		b.WriteString("}\x94(")
		memo++
		if i == 0 {
			b.WriteString(sbu("id") + "\x94")
			memo++
		} else {
			b.WriteString("h\x02")
		}
		b.WriteByte('J')
		binary.Write(&b, binary.LittleEndian, int32(i))
		if i == 0 {
			b.WriteString(sbu("name") + "\x94")
			memo++
		} else {
			b.WriteString("h\x03")
		}
		b.WriteString(sbu(fmt.Sprintf("n%d", i)) + "\x94u")
		memo++
		if i%1000 == 999 {
			b.WriteString("e(")
		}
	}
	b.WriteString("e.")
	return b.Bytes()
}

var benchN = 1_000_000

// BenchmarkWalk1M walks a pickled list of 1M small dicts.
func BenchmarkWalk1M(b *testing.B) {
	var data []byte
	if p := os.Getenv("MODELS_BENCH_PICKLE"); p != "" {
		d, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		data = d
	} else {
		data = bigList(benchN)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := Walk(bytes.NewReader(data), Limits{})
		if len(r.Problems) != 0 {
			b.Fatalf("problems: %+v", r.Problems[0])
		}
	}
}

func FuzzWalk(f *testing.F) {
	for _, s := range []string{
		"cos\nsystem\n(S'true'\ntR.",
		"\x80\x04" + sbu("posix") + "\x94" + sbu("system") + "\x93)R.",
		"\x80\x02\x82\x05)R.",
		"\x80\x04\x95\x02\x00\x00\x00\x00\x00\x00\x00B\x03\x00\x00\x00abc.",
		"(S'true'\nios\nsystem\n.",
		string(bigList(3)),
		string(hostile.Pickle(hostile.PDict{"wandb", hostile.PDict{"api_key", "value-0123456789"}}, false)),
		string(hostile.Pickle(hostile.PDict{"args", hostile.PNamespace{"seed", 1, "hf_token", "value-0123456789"}}, true)),
		string(hostile.Pickle(hostile.PDict{"cfg", hostile.POmega{"l", hostile.PList{"value-0123456789"}, "o", hostile.POrdered{"k", "value-0123456789"}}}, false)),
	} {
		f.Add([]byte(s))
	}
	entries, _ := os.ReadDir("../../../fixtures/models/bypass")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pkl") {
			d, _ := os.ReadFile("../../../fixtures/models/bypass/" + e.Name())
			f.Add(d)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := Walk(bytes.NewReader(data), Limits{MaxMemo: 1000, MaxStack: 1000, MaxString: 1 << 16})
		if r.End > int64(len(data)) {
			t.Fatalf("read past the end: %d > %d", r.End, len(data))
		}
		for _, s := range r.Strings {
			if strings.Count(s.Key, ".") >= maxKeyDepth || len(s.Key) > maxKeyDepth*(maxKeyLen+1) {
				t.Fatalf("key past its bounds: %q", s.Key)
			}
		}
	})
}

func BenchmarkWalk10K(b *testing.B) {
	benchN = 100_000
	defer func() { benchN = 1_000_000 }()
	BenchmarkWalk1M(b)
}

// TestPastLimits: an import placed after a structural limit (1,048,576
// MARKs, a stack or memo filled to its limit) or after more than 64 KiB of
// garbage is still found (issue 15: posix.system after the MARK limit was
// never reported).
func TestPastLimits(t *testing.T) {
	call := "cposix\nsystem\n(S'true'\ntR."
	cases := map[string]string{
		"marks":   "\x80\x02" + strings.Repeat("(", 1<<20+10) + call,
		"stack":   "\x80\x02" + strings.Repeat("N", 1<<20+10) + call,
		"memo":    "\x80\x04" + "N" + strings.Repeat("\x94", 1<<20+10) + call,
		"garbage": "\x80\x02N.\xff" + strings.Repeat("\xff", 200<<10) + "\x80\x02" + call,
	}
	for name, data := range cases {
		r := Walk(strings.NewReader(data), Limits{})
		found := false
		for _, g := range r.Globals {
			found = found || g.Module == "posix" && g.Name == "system" && len(g.Calls) > 0
		}
		if !found {
			t.Errorf("%s: posix.system not found: %+v %+v", name, r.Globals, r.Problems)
		}
		if name != "garbage" && (!r.Limited || len(r.Problems) == 0) {
			t.Errorf("%s: limit not reported: %+v", name, r.Problems)
		}
	}
}
