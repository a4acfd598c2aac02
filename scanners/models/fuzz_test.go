package models

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
	"github.com/mlwarden/mlwarden/scanners"
)

// seed adds every fixture whose name matches one of the suffixes.
func seed(f *testing.F, suffixes ...string) {
	dirs := []string{filepath.Join(fixtures, "benign"), filepath.Join(fixtures, "malicious"), filepath.Join(fixtures, "bypass"), filepath.Join(fixtures, "odd"),
		joblibTestData} // files of old joblib releases, where installed
	for _, dir := range dirs {
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err != nil || !info.Mode().IsRegular() || info.Size() > 64<<10 {
				return nil
			}
			for _, s := range suffixes {
				if strings.HasSuffix(p, s) {
					d, _ := os.ReadFile(p)
					f.Add(d)
				}
			}
			return nil
		})
	}
}

// fuzzScan runs one handler on data with small limits; it must not panic,
// hang or read past the data.
var fuzzScanner = sync.OnceValue(func() *Scanner {
	return New(WithLimits(Limits{MaxDepth: 3, MaxExpand: 8 << 20, MaxMembers: 200, MaxInMemory: 1 << 20,
		MaxDict: 1 << 20, MaxHeader: 1 << 20, MaxEntries: 1000, MaxSearch: 16 << 20}), WithStrings(func(context.Context, *scanners.Artifact, []byte) []scanners.Finding { return nil }))
})

func fuzzScan(t *testing.T, data []byte, run func(sc *scan, ra *bytes.Reader, size int64)) {
	s := fuzzScanner()
	sc := &scan{s: s, ctx: context.Background(), a: &scanners.Artifact{Path: "fuzz"}, budget: s.lim.MaxExpand}
	run(sc, bytes.NewReader(data), int64(len(data)))
	for _, f := range sc.out {
		if f.RuleID == "" || f.Message == "" {
			t.Fatalf("empty finding %+v", f)
		}
	}
}

func FuzzZip(f *testing.F) {
	seed(f, ".pt", ".zip", ".npz", ".keras", ".pth", ".ckpt")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.zip(nil, ra, n, 0) })
	})
}

func FuzzSafetensors(f *testing.F) {
	seed(f, ".safetensors")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.safetensors(nil, ra, n) })
	})
}

func FuzzNpy(f *testing.F) {
	seed(f, ".npy")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.npy(nil, ra, n) })
	})
}

func FuzzGGUF(f *testing.F) {
	seed(f, ".gguf")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.gguf(nil, ra, n) })
	})
}

func FuzzProtobuf(f *testing.F) {
	seed(f, ".pb", ".onnx")
	for _, loc := range []string{"sub/../w.bin", "../w.bin", `C:\x`} {
		f.Add(hostile.ONNXExternal(loc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.protobuf(nil, ra, n, "saved_model.pb") })
	})
}

// hostileSeeds adds the crafted inputs of issue 15, small enough to mutate.
func hostileSeeds(f *testing.F) {
	for _, d := range [][]byte{
		hostile.SevenZipFiles(1 << 28), hostile.SevenZipProps(30 << 30), hostile.SevenZipEncoded(1 << 28),
		hostile.LzmaDict(1 << 31), hostile.XzDict(39), hostile.Safetensors(4096), hostile.NestedPickle(100),
		hostile.NestedZip(4, 3), hostile.ManyEntriesZip(50), hostile.CorruptMemberZip(), hostile.NpyTruncated(),
		hostile.SavedModel(100), hostile.ClimbingTar("/etc/shadow"), hostile.ClimbingZip("../../etc/shadow"),
		hostile.MemoPickle(4096), append(append([]byte{}, hostile.H5Magic...), hostile.H5Tail()...),
	} {
		f.Add(d)
	}
}

// Fuzz7z feeds 7z archives to the header check and the reader behind it.
func Fuzz7z(f *testing.F) {
	seed(f, ".7z")
	hostileSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if !bytes.HasPrefix(data, []byte("7z\xbc\xaf\x27\x1c")) {
			return
		}
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.sevenZip(nil, ra, n, 0) })
	})
}

// FuzzXz feeds xz files to the dictionary check.
func FuzzXz(f *testing.F) {
	seed(f, ".xz")
	hostileSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkXz(bytes.NewReader(data), int64(len(data)), 1<<20)
	})
}

// FuzzScan goes through content sniffing, so every format and archive path
// is reachable.
func FuzzScan(f *testing.F) {
	seed(f, "")
	hostileSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.content(nil, ra, n, "fuzz", 0) })
	})
}

// FuzzTemplate feeds chat templates to the Jinja reader and the analysis:
// no panic, no hang, offsets inside the template.
func FuzzTemplate(f *testing.F) {
	files, _ := filepath.Glob("testdata/templates/*.jinja")
	for _, p := range files {
		d, _ := os.ReadFile(p)
		f.Add(string(d))
	}
	for _, s := range []string{
		`{{ cycler.__init__.__globals__.os.popen('true').read() }}`, `{{ ()|attr(dict(__cl=1,ass__=2)|join) }}`,
		`{% macro m(a='__class__') %}{{ ()[a] }}{% endmacro %}{{ m() }}`, `{{ '{0.__class__}'.format(x) }}`,
		`{% raw %}{{ x }}{% endraw %}{# c #}{{ "\x5f\N{LOW LINE}" }}`, `{% for a, b in x|items if a recursive %}{% endfor %}`,
		`{{ x[1:2:-1] ~ ('%c' % 95) * 2 }}`, `{{ ((((((x))))))`, `{% set ns.a | upper %}`, `{{ a is not divisibleby 3 }}`,
		hostile.TemplateDoubling("dict", 40), hostile.TemplateDoubling("namespace", 40), hostile.TemplateDoubling("list", 40),
	} {
		f.Add(s)
	}
	for _, trick := range hostile.TemplateTricks() {
		f.Add(hostile.ChatTemplateEscape(trick))
	}
	f.Fuzz(func(t *testing.T, src string) {
		hits, _, _, _ := analyzeTemplate(src)
		for _, h := range hits {
			if h.off < 0 || h.off > len(src) || h.what == "" {
				t.Fatalf("bad hit %+v in %q", h, src)
			}
		}
	})
}

// FuzzSource feeds Python source to the tokenizer and the import and call
// resolution, and any bytes to the peeling of encodings.
func FuzzSource(f *testing.F) {
	for _, s := range []string{
		"import os as o\no.system('true')\n", "from subprocess import call as c; c(['x'])",
		"__import__('os').popen('id').read()", "getattr(os, 'system')('x')", `exec(base64.b64decode("aW1wb3J0IG9z"))`,
		`x = '''a` + "\n" + `'''; y = r'\\'; z = b"\x00"`, "import a.b.c, d as e", "eJzLSM3JyQcABiwCFQ==", "7a6c6962",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		refs, _, _ := sourceRefs(src)
		for _, r := range refs {
			if r.module == "" && r.name == "" {
				t.Fatalf("empty ref in %q", src)
			}
		}
		unwrap([]byte(src))
	})
}

// FuzzChatConfig feeds tokenizer and chat configs (JSON, YAML) to the walk
// that finds the templates in every string value.
func FuzzChatConfig(f *testing.F) {
	for _, shape := range []string{"chat_template", "named", "nested", "default"} {
		f.Add(hostile.TokenizerConfig(shape, hostile.ChatTemplateEscape("block set")))
	}
	f.Add([]byte("chat_template: x\ntemplates:\n  - body: '{{ lipsum[k] }}'\n"))
	f.Add([]byte(`{"x": NaN, "t": "{% set a %}b{% endset %}"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.chatJSON(nil, ra, n, "tokenizer_config.json") })
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.chatYAML(nil, ra, n, "serve.yaml") })
	})
}

// FuzzKerasConfig feeds Keras config.json text to the walk that judges what
// a config names.
func FuzzKerasConfig(f *testing.F) {
	f.Add([]byte(`{"module": "builtins", "class_name": "function", "config": "print"}`))
	f.Add([]byte(`{"class_name": "X", "registered_name": "os>system", "config": {"fn": "subprocess.check_output", "inner": "{\"class_name\": \"Lambda\"}"}}`))
	f.Add([]byte(`{"class_name": "X", "config": {"fn": "keras.utils.get_file", "origin": "https://example.invalid/x", "cache_dir": "../../x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.kerasJSON(nil, data, "3.9.0") })
	})
}
