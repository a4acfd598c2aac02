package scannertest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCorpusFile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []any
		err  string
	}{
		{"go test fuzz v1\n[]byte(\"\\\"\\r0\")\n", []any{[]byte("\"\r0")}, ""},
		{"go test fuzz v1\r\nstring(\"run.sh\")\n\n  []byte(\"a\\x00b\")  \n", []any{"run.sh", []byte("a\x00b")}, ""},
		{"go test fuzz v1\n[]uint8(`raw`)\n", []any{[]byte("raw")}, ""},
		{"go test fuzz v2\n[]byte(\"\")\n", nil, "not a seed corpus file"},
		{"", nil, "not a seed corpus file"},
		{"go test fuzz v1\n", nil, "no values"},
		{"go test fuzz v1\nint(5)\n", nil, "line 2: \"int(5)\": unsupported value int"},
		{"go test fuzz v1\nfloat64(\"x\")\n", nil, "unsupported type float64"},
		{"go test fuzz v1\n[]byte(\"a\"\n", nil, "line 2"},
		{"go test fuzz v1\n[]byte(\"a\", \"b\")\n", nil, "want a conversion of one literal"},
	} {
		got, err := ParseCorpusFile([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
}

func TestReadCorpus(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"b1": "go test fuzz v1\n[]byte(\"two\")\n",
		"a0": "go test fuzz v1\n[]byte(\"one\")\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadCorpus(dir)
	if want := [][]any{{[]byte("one")}, {[]byte("two")}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if got, err := ReadCorpus(filepath.Join(dir, "FuzzNone")); got != nil || err != nil {
		t.Errorf("missing dir: %v, %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, "c2"), []byte("garbage"), 0o644)
	if _, err := ReadCorpus(dir); err == nil || !strings.Contains(err.Error(), "c2") {
		t.Errorf("bad file: err %v", err)
	}
}

const fuzzSource = `package p

import "testing"

func FuzzOne(f *testing.F) {
	for _, s := range []string{"a", "b" + "c", ` + "`raw`" + `} {
		f.Add([]byte(s))
	}
	f.Add([]byte("d"))
	f.Add(computed())
	f.Fuzz(func(t *testing.T, data []byte) {})
}

func FuzzTwo(fz *testing.F) {
	fz.Add("run.sh", "x")
	for _, p := range []string{"a", "b"} {
		for _, c := range []string{"1", "2"} {
			fz.Add(p, c)
		}
	}
	f := helper()
	f.Add("not the fuzz target's F")
}

func FuzzNone(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.in)
	}
}

func computed() []byte { return nil }
`

func TestFuzzInputs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fuzz_test.go")
	if err := os.WriteFile(file, []byte(fuzzSource), 0o644); err != nil {
		t.Fatal(err)
	}
	// FuzzInputs reads testdata/fuzz/NAME relative to the package directory.
	t.Chdir(dir)
	os.MkdirAll(filepath.Join("testdata", "fuzz", "FuzzOne"), 0o755)
	os.WriteFile(filepath.Join("testdata", "fuzz", "FuzzOne", "0f"), []byte("go test fuzz v1\n[]byte(\"corpus\")\n"), 0o644)

	if got, want := FuzzInputs(t, "fuzz_test.go", "FuzzOne"), [][]any{{[]byte("a")}, {[]byte("bc")}, {[]byte("raw")}, {[]byte("d")}, {[]byte("corpus")}}; !reflect.DeepEqual(got, want) {
		t.Errorf("FuzzOne: got %q, want %q", got, want)
	}
	if got, want := FuzzInputs(t, "fuzz_test.go", "FuzzTwo"), [][]any{{"run.sh", "x"}, {"a", "1"}, {"a", "2"}, {"b", "1"}, {"b", "2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("FuzzTwo: got %q, want %q", got, want)
	}
	if got, err := addSeeds("fuzz_test.go", "FuzzNone"); len(got) != 0 || err != nil {
		t.Errorf("FuzzNone: got %q, %v; want nothing", got, err)
	}
	if _, err := addSeeds("fuzz_test.go", "FuzzMissing"); err == nil {
		t.Error("FuzzMissing: no error")
	}
	seeds := FuzzFiles(t, "fuzz_test.go", "FuzzOne", "Dockerfile", "run.sh")
	if len(seeds) != 10 || seeds[0].Path != "Dockerfile" || seeds[1].Path != "run.sh" || string(seeds[1].Data) != "a" {
		t.Errorf("FuzzFiles: %q", seeds)
	}
}
