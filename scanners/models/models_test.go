package models

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
)

func rulesOf(fs []scanners.Finding, min scanners.Severity) []string {
	var out []string
	for _, f := range fs {
		if f.Severity >= min {
			out = append(out, f.RuleID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestBenignFixtures: files written by the real libraries give nothing above
// low, and every model file among them is recognised by content.
func TestBenignFixtures(t *testing.T) {
	s := New()
	for _, p := range walkFixtures(t, "benign") {
		t.Run(filepath.Base(p), func(t *testing.T) {
			fs, wanted := scanFile(t, s, p)
			if !wanted && !strings.HasSuffix(p, "weights.bin") {
				t.Errorf("%s: not recognised as a model file", p)
			}
			for _, f := range fs {
				if f.Severity > scanners.SeverityLow {
					t.Errorf("%s: unexpected %s %s: %s", p, f.Severity, f.RuleID, f.Message)
				}
			}
		})
	}
}

// TestMaliciousFixtures: the same libraries writing harmful objects.
func TestMaliciousFixtures(t *testing.T) {
	cases := map[string][]string{
		"exec_print.pkl":                               {"models/pickle-dangerous-global"},
		"gguf_ssti.gguf":                               {"models/gguf-template-injection"},
		"joblib_os_system.joblib":                      {"models/pickle-dangerous-global"},
		"joblib_os_system_xz.joblib":                   {"models/pickle-dangerous-global"},
		"keras_lambda.h5":                              {"models/keras-lambda"},
		"keras_lambda.keras":                           {"models/keras-lambda"},
		"models.tar.gz":                                {"models/pickle-dangerous-global"},
		"npz_object_os_system.npz":                     {"models/numpy-object-array", "models/pickle-dangerous-global"},
		"object_array_os_system.npy":                   {"models/numpy-object-array", "models/pickle-dangerous-global"},
		"onnx_absolute/model.onnx":                     {"models/onnx-external-data-path"},
		"onnx_traversal/model.onnx":                    {"models/onnx-external-data-path"},
		"os_system_p0.pkl":                             {"models/pickle-dangerous-global"},
		"os_system_p1.pkl":                             {"models/pickle-dangerous-global"},
		"os_system_p2.pkl":                             {"models/pickle-dangerous-global"},
		"os_system_p3.pkl":                             {"models/pickle-dangerous-global"},
		"os_system_p4.pkl":                             {"models/pickle-dangerous-global"},
		"os_system_p5.pkl":                             {"models/pickle-dangerous-global"},
		"safetensors_bad_dtype.safetensors":            {"models/safetensors-malformed"},
		"safetensors_out_of_range.safetensors":         {"models/safetensors-malformed"},
		"safetensors_overlap.safetensors":              {"models/safetensors-malformed"},
		"tf_readfile/saved_model.pb":                   {"models/tf-unsafe-op"},
		"tf_keras_metadata/keras_metadata.pb":          {"models/keras-lambda"},
		"torch_legacy_os_system.pt":                    {"models/pickle-dangerous-global"},
		"torch_zip_os_system.pt":                       {"models/pickle-dangerous-global"},
		"tokenizer_ssti/tokenizer_config.json":         {"models/chat-template-injection"},
		"chat_template_obfuscated/chat_template.jinja": {"models/chat-template-injection"},
		"ollama_ssti/Modelfile":                        {"models/chat-template-injection"},
		"gguf_ssti_obfuscated.gguf":                    {"models/gguf-template-injection"},
		"onnx_pyop/model.onnx":                         {"models/onnx-custom-op"},
		"keras3_lambda.keras":                          {"models/keras-lambda"},
	}
	s := New()
	files := walkFixtures(t, "malicious")
	if len(files) != len(cases) {
		t.Errorf("%d malicious fixtures, %d cases: keep the table in step with gen.py", len(files), len(cases))
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			fs, _ := scanFile(t, s, filepath.Join(fixtures, "malicious", name))
			got := rulesOf(fs, scanners.SeverityLow)
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("want %s, got %v", w, got)
				}
			}
			if !slices.ContainsFunc(fs, func(f scanners.Finding) bool { return f.Severity >= scanners.SeverityHigh }) {
				t.Errorf("no finding at high or above: %v", got)
			}
			for _, f := range fs {
				if f.Message == "" || f.Evidence == "" || f.Path == "" {
					t.Errorf("finding without message, evidence or path: %+v", f)
				}
			}
		})
	}
}

// TestBypass holds one regression test per known public scanner bypass; the
// subtest is named after the fixture, and fixtures/models/bypass/ADVISORIES.txt
// names the advisory.
func TestBypass(t *testing.T) {
	cases := []struct {
		file string
		want []string // rules that must be reported at high or above
		// global that must be named in some finding's evidence
		global string
	}{
		{"pip_main.pkl", []string{"models/pickle-dangerous-global"}, "pip.main"},
		{"pkgutil_resolve_name.pkl", []string{"models/pickle-dangerous-global"}, "pkgutil.resolve_name"},
		{"dotted_name.pkl", []string{"models/pickle-dangerous-global"}, "pathlib.os.system"},
		{"stack_global_string_operands.pkl", []string{"models/pickle-dangerous-global"}, "os.system"},
		{"memo_desync.pkl", []string{"models/pickle-dangerous-global"}, "posix.system"},
		{"obj_pop.pkl", []string{"models/pickle-dangerous-global"}, "os.system"},
		{"inst.pkl", []string{"models/pickle-dangerous-global"}, "os.system (INST)"},
		{"ext_opcode.pkl", []string{"models/pickle-dangerous-global", "models/pickle-extension-code"}, "copyreg.add_extension"},
		{"nullifai_broken_stream.pkl", []string{"models/pickle-dangerous-global", "models/pickle-malformed"}, "os.system"},
		{"unknown_opcode_after_payload.pkl", []string{"models/pickle-dangerous-global", "models/pickle-malformed"}, "builtins.exec"},
		{"second_pickle.pkl", []string{"models/pickle-dangerous-global", "models/pickle-trailing-data"}, "posix.system"},
		{"asyncio_submodule.pkl", []string{"models/pickle-dangerous-global"}, "asyncio.unix_events"},
		{"mailcap_findmatch.pkl", []string{"models/pickle-dangerous-global"}, "mailcap.findmatch"},
		{"code_runsource.pkl", []string{"models/pickle-dangerous-global"}, "code.InteractiveInterpreter.runsource"},
		{"numpy_builtins.pkl", []string{"models/pickle-dangerous-global"}, "numpy.__builtins__"},
		{"computed_stack_global.pkl", []string{"models/pickle-dynamic-global", "models/pickle-dangerous-global"}, "_operator.add"},
		{"load_from_bytes.pkl", []string{"models/pickle-dangerous-global"}, "(pickle in a bytes constant"},
		{"frame_boundary.pkl", []string{"models/pickle-malformed", "models/pickle-dangerous-global"}, "os.system by byte scan"},
		{"pickle_named_bin.bin", []string{"models/pickle-dangerous-global"}, "posix.system"},
		{"pickle_named_safetensors.safetensors", []string{"models/pickle-dangerous-global"}, "posix.system"},
		{"legacy_sysinfo_payload.pt", []string{"models/pickle-dangerous-global"}, "posix.system"},
		{"zip_flag_bits.pt", []string{"models/pickle-dangerous-global", "models/archive-malformed"}, "archive/data.pkl"},
		{"zip_local_name_mismatch.pt", []string{"models/pickle-dangerous-global", "models/archive-malformed"}, "archive/data.pkX"},
		{"zip_bad_crc.pt", []string{"models/pickle-dangerous-global", "models/archive-malformed"}, "crc"},
		{"zip_duplicate_entry.pt", []string{"models/pickle-dangerous-global", "models/archive-malformed"}, "duplicate entry"},
		{"zip_hidden_member.zip", []string{"models/pickle-dangerous-global"}, "weights/part-0001.dat"},
		{"nested_tar_zip.tar.gz", []string{"models/pickle-dangerous-global"}, "release/model.zip → model/blob"},
		{"joblib_payload_after_array.joblib", []string{"models/pickle-dangerous-global"}, "posix.system"},
		{"joblib_lzma.joblib", []string{"models/pickle-dangerous-global"}, "(lzma)"},
		{"npy_structured_object.npy", []string{"models/pickle-dangerous-global"}, "posix.system"},
		{"keras_nested_lambda.keras", []string{"models/keras-lambda"}, "hidden"},
		{"keras_module_function.keras", []string{"models/keras-unsafe-module"}, "module os, name system"},
		{"nullifai_7z.7z", []string{"models/pickle-dangerous-global"}, "model → archive/data.pkl"},
		{"nested_base64_pickle.pkl", []string{"models/pickle-dangerous-global"}, "posix.system (GLOBAL) at offset 2 in member (base64 in a string constant at byte 22)"},
		{"nested_zlib_pickle.pkl", []string{"models/pickle-dangerous-global"}, "(zlib in a bytes constant at byte 20)"},
		{"nested_hex_base64_pickle.pkl", []string{"models/pickle-dangerous-global"}, "(hex in a string constant at byte 13) → (base64)"},
		{"exec_base64_source.pkl", []string{"models/embedded-code", "models/pickle-dangerous-global"}, "decoded by base64 at byte 54): imports os (line 1), calls os.system (line 2)"},
		{"exec_codecs_hex.pkl", []string{"models/embedded-code"}, "decoded by hex at byte 40): calls subprocess.call"},
		{"exec_multistage.pkl", []string{"models/embedded-code"}, "base64 in a string at line 2 of the Python source builtins.exec calls"},
		{"safetensors_metadata_pickle.safetensors", []string{"models/pickle-dangerous-global"}, `(base64 in safetensors __metadata__ "extra")`},
		{"safetensors_metadata_code.safetensors", []string{"models/embedded-code"}, "calls subprocess.run"},
		{"keras_torch_module_wrapper.keras", []string{"models/keras-unsafe-module", "models/pickle-dangerous-global"}, "CVE-2025-49655"},
		{"keras_get_file.keras", []string{"models/keras-unsafe-module"}, "CVE-2025-8747"},
		{"keras_enable_unsafe.keras", []string{"models/keras-unsafe-module"}, "CVE-2025-9906"},
		{"keras2_lambda_module_os.h5", []string{"models/keras-unsafe-module", "models/keras-lambda"}, "module os, name system"},
		{"keras_fn_module_subprocess.keras", []string{"models/keras-unsafe-module"}, "module subprocess, name check_output"},
		{"saved_model_field_order/saved_model.pb", []string{"models/tf-unsafe-op"}, "PyFunc"},
		{"sevenzip_climbing_name.7z", []string{"models/archive-malformed"}, "../authorized_keys"},
	}
	adv, err := os.ReadFile(filepath.Join(fixtures, "bypass", "ADVISORIES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	if n := len(walkFixtures(t, "bypass")); n != len(cases) {
		t.Errorf("%d bypass fixtures, %d cases: keep the table in step with gen.py", n, len(cases))
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(filepath.Dir(c.file)+"_"+filepath.Base(c.file), filepath.Ext(c.file)), func(t *testing.T) {
			if !bytes.Contains(adv, []byte(c.file+"\t")) {
				t.Errorf("%s has no advisory in ADVISORIES.txt", c.file)
			}
			fs, wanted := scanFile(t, s, filepath.Join(fixtures, "bypass", c.file))
			if !wanted {
				t.Fatalf("not recognised by content")
			}
			got := rulesOf(fs, scanners.SeverityHigh)
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("want %s at high or above, got %v", w, got)
				}
			}
			if !slices.ContainsFunc(fs, func(f scanners.Finding) bool {
				return strings.Contains(f.Evidence, c.global) || strings.Contains(f.Message, c.global)
			}) {
				t.Errorf("no finding names %q", c.global)
				for _, f := range fs {
					t.Logf("  %s %s", f.RuleID, f.Evidence)
				}
			}
		})
	}
}

// TestOddFixtures: valid files that are unusual — encrypted zip members
// (ZipCrypto, AES, stored), a GGUF cut inside its chat template, an ONNX op
// in a custom domain — give their rule at medium and nothing above it.
func TestOddFixtures(t *testing.T) {
	cases := map[string]string{
		"zip_zipcrypto.zip":             "models/unscannable",
		"zip_aes256.zip":                "models/unscannable",
		"zip_zipcrypto_stored.zip":      "models/unscannable",
		"gguf_truncated.gguf":           "models/gguf-malformed",
		"onnx_custom_domain/model.onnx": "models/onnx-custom-op",
	}
	if n := len(walkFixtures(t, "odd")); n != len(cases) {
		t.Errorf("%d odd fixtures, %d cases: keep the table in step with gen.py", n, len(cases))
	}
	s := New()
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			fs, wanted := scanFile(t, s, filepath.Join(fixtures, "odd", name))
			if !wanted {
				t.Fatal("not recognised")
			}
			if got := rulesOf(fs, scanners.SeverityMedium); !slices.Equal(got, []string{want}) {
				t.Errorf("got %v, want [%s]", got, want)
			}
			for _, f := range fs {
				if f.Severity > scanners.SeverityMedium {
					t.Errorf("%s %s: %s", f.Severity, f.RuleID, f.Message)
				}
			}
		})
	}
}

// fakeKey makes a W&B-shaped key (40 hex) from a seed, at test time, so no
// format-valid credential sits in the fixtures.
func fakeKey(seed int64) string {
	r := rand.New(rand.NewSource(seed))
	const hex = "0123456789abcdef"
	b := make([]byte, 40)
	for i := range b {
		b[i] = hex[r.Intn(16)]
	}
	return string(b)
}

// pickleDict is a protocol 2 pickle of {k: v} written the way CPython does.
func pickleDict(k, v string) []byte {
	var b bytes.Buffer
	b.WriteString("\x80\x02}q\x00")
	for _, s := range []string{k, v} {
		b.WriteByte('X')
		b.Write([]byte{byte(len(s)), 0, 0, 0})
		b.WriteString(s)
	}
	b.WriteString("s.")
	return b.Bytes()
}

type capture struct {
	mu   sync.Mutex
	data []string
	arts []scanners.Artifact
}

func (c *capture) scan(_ context.Context, a *scanners.Artifact, data []byte) []scanners.Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data = append(c.data, string(data))
	c.arts = append(c.arts, *a)
	return []scanners.Finding{{RuleID: "secrets/test", Check: "secrets", Severity: scanners.SeverityHigh, Path: a.Path, Message: "found"}}
}

// TestStringsHandOff: strings inside models reach the secrets check's
// BytesScanner, with the place inside the model in the artifact's note.
func TestStringsHandOff(t *testing.T) {
	key := fakeKey(4)
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
	w.Write(pickleDict("wandb_api_key", key))
	zw.Close()
	st := func(meta string) []byte {
		h := `{"__metadata__":{"note":"` + meta + `"}}`
		b := make([]byte, 8)
		b[0] = byte(len(h))
		return append(b, h...)
	}
	cases := map[string][]byte{
		"ckpt.pt":           zbuf.Bytes(),
		"args.pkl":          pickleDict("wandb_api_key", key),
		"model.safetensors": st("key " + key),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			c := &capture{}
			s := New(WithStrings(c.scan))
			fs, err := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Kind: scanners.ArtifactFile, Path: name}, data)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(c.data, func(d string) bool { return strings.Contains(d, key) }) {
				t.Fatalf("key not handed to the strings scanner: %q", c.data)
			}
			if !slices.ContainsFunc(fs, func(f scanners.Finding) bool { return f.RuleID == "secrets/test" }) {
				t.Errorf("the strings scanner's findings were dropped")
			}
			if c.arts[0].Note == "" {
				t.Errorf("no note saying where in the model the string was")
			}
		})
	}
}

func TestRules(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range New().Rules() {
		if !strings.HasPrefix(r.ID, "models/") || r.Check != "models" || r.Title == "" || r.Why == "" || r.Fix == "" {
			t.Errorf("incomplete rule %+v", r)
		}
		if seen[r.ID] {
			t.Errorf("duplicate rule %s", r.ID)
		}
		seen[r.ID] = true
	}
}

// TestUserRules: a user rules directory replaces the built-in table.
func TestUserRules(t *testing.T) {
	fsys := fstest.MapFS{rules.PickleFile: {Data: []byte("dangerous:\n  - {module: collections, why: test}\nsafe: []\nlibrary: []\n")}}
	s := New(WithRulesFS(fsys))
	data := []byte("\x80\x02ccollections\nOrderedDict\n)R.")
	fs, err := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Path: "x.pkl"}, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := rulesOf(fs, scanners.SeverityCritical); !slices.Equal(got, []string{"models/pickle-dangerous-global"}) {
		t.Errorf("got %v", got)
	}
	bad := New(WithRulesFS(fstest.MapFS{rules.PickleFile: {Data: []byte("dangerous: [{names: [x]}]")}}))
	if _, err := bad.Scan(context.Background(), &scanners.Artifact{}, nil); err == nil {
		t.Errorf("a broken rules file must fail the scan")
	}
}

func TestClassify(t *testing.T) {
	s := New()
	cases := []struct {
		module, name string
		want         tier
	}{
		{"torch._utils", "_rebuild_tensor_v2", tierSafe},
		{"collections", "OrderedDict", tierSafe},
		{"numpy.core.multiarray", "_reconstruct", tierSafe},
		{"sklearn.linear_model._logistic", "LogisticRegression", tierLibrary},
		{"sklearn.base", "BaseEstimator.__init__.__globals__", tierDangerous},
		{"sklearn.base", "BaseEstimator.fit", tierUnknown},
		{"posix", "system", tierDangerous},
		{"os.path", "join", tierDangerous},
		{"builtins", "getattr", tierDangerous},
		{"builtins", "__dict__", tierDangerous},
		{"builtins", "set", tierSafe},
		{"pathlib", "os.system", tierDangerous},
		{"numpy.testing._private.utils", "runstring", tierDangerous},
		{"torch.serialization", "load", tierDangerous},
		{"torch.compile", "dangerous", tierDangerous}, // a module path through torch's compile (fickling's suite)
		{"torch.nn.modules.linear", "Linear", tierLibrary},
		{"mymodule", "MyClass", tierUnknown},
		{"__main__", "Net", tierUnknown},
	}
	// Every class that opens a connection or starts a process is in the
	// same tier, whatever its name (IMAP4 was medium while IMAP4_stream was
	// blocked).
	for _, g := range []string{
		"imaplib.IMAP4", "imaplib.IMAP4_SSL", "imaplib.IMAP4_stream", "smtplib.SMTP", "smtplib.SMTP_SSL",
		"ftplib.FTP", "ftplib.FTP_TLS", "telnetlib.Telnet", "poplib.POP3", "poplib.POP3_SSL", "nntplib.NNTP",
		"socket.socket", "socket.create_connection", "_socket.socket", "ssl.SSLSocket", "_ssl._SSLContext",
		"http.client.HTTPConnection", "http.client.HTTPSConnection", "http.server.HTTPServer",
		"urllib.request.urlopen", "urllib.request.OpenerDirector", "urllib3.PoolManager", "requests.get",
		"xmlrpc.client.ServerProxy", "socketserver.TCPServer", "asyncore.dispatcher", "smtpd.SMTPServer",
		"wsgiref.simple_server.make_server", "webbrowser.open",
		"subprocess.Popen", "subprocess.run", "subprocess.check_output", "subprocess.getoutput",
		"os.system", "os.popen", "os.execv", "os.spawnl", "posix.posix_spawn", "nt.system", "pty.spawn",
		"multiprocessing.Process", "multiprocessing.Pool", "multiprocessing.context.Process", "_multiprocessing.SemLock",
		"asyncio.subprocess.create_subprocess_shell", "asyncio.create_subprocess_exec", "asyncio.unix_events._UnixSubprocessTransport",
		"concurrent.futures.ProcessPoolExecutor", "threading.Thread", "_thread.start_new_thread", "sched.scheduler",
		"_posixsubprocess.fork_exec", "pexpect.spawn", "fcntl.ioctl",
	} {
		i := strings.LastIndexByte(g, '.')
		cases = append(cases, struct {
			module, name string
			want         tier
		}{g[:i], g[i+1:], tierDangerous})
	}
	for _, c := range cases {
		if got := s.cls.classify(c.module, c.name); got.tier != c.want {
			t.Errorf("%s.%s: tier %d, want %d", c.module, c.name, got.tier, c.want)
		}
	}
}

func TestWants(t *testing.T) {
	s := New()
	no := map[string]string{
		"main.go":   "package main\n\nfunc main() {}\n",
		"README.md": "# Title\n\nSome text (with parens).\n",
		"elf":       "\x7fELF\x02\x01\x01\x00",
		"config":    "(c)ontrived text that starts like a pickle\nand goes on\n",
		"empty":     "",
		"data.json": `{"a": 1}`,
	}
	for name, data := range no {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: name, Size: int64(len(data))}
		if s.Wants(a, []byte(data)) {
			t.Errorf("%s: wanted", name)
		}
	}
	if s.Wants(&scanners.Artifact{Kind: scanners.ArtifactImageConfig}, []byte("\x80\x02}.")) {
		t.Errorf("image config wanted")
	}
}

// TestLimits: nesting deeper than the limit and decompression bombs are
// reported, not followed.
func TestLimits(t *testing.T) {
	inner := pickleDict("a", "b")
	data := inner
	for i := 0; i < 6; i++ {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, _ := zw.Create(fmt.Sprintf("level%d", i))
		w.Write(data)
		zw.Close()
		data = b.Bytes()
	}
	fs, _ := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Path: "deep.zip"}, data)
	if !slices.Contains(rulesOf(fs, scanners.SeverityMedium), "models/unscannable") {
		t.Errorf("depth limit not reported: %v", rulesOf(fs, 0))
	}
	var bomb bytes.Buffer
	zw := zip.NewWriter(&bomb)
	w, _ := zw.Create("bomb")
	w.Write([]byte("\x80\x02]q\x00(")) // a pickle that goes on and on
	w.Write(bytes.Repeat([]byte("K\x01"), 4<<20))
	zw.Close()
	fs, _ = scanners.ScanBytes(context.Background(), New(WithLimits(Limits{MaxExpand: 1 << 20})), &scanners.Artifact{Path: "bomb.zip"}, bomb.Bytes())
	if !slices.Contains(rulesOf(fs, scanners.SeverityMedium), "models/unscannable") {
		t.Errorf("expansion limit not reported: %v", rulesOf(fs, 0))
	}
}

// TestFailClosedNames: a file named like a model whose content is in no
// known format is reported; a Git LFS pointer and random bytes that merely
// start like a pickle are not.
func TestFailClosedNames(t *testing.T) {
	cases := []struct {
		name, data string
		want       []string
	}{
		{"model.pt", "\x00\x01garbage that is no model", []string{"models/unscannable"}},
		{"model.pt", "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 12\n", nil},
		{"blob.bin", "\x80\x02\x00\x01\x02 random binary", nil},
		{"notes.txt", "just text", nil},
		{"bundle.zip", zipOf("weights/model.pt", "\x00\x01 not a model"), []string{"models/unscannable"}},
		{"bundle.zip", zipOf("README.md", "text"), nil},
		// Python's site .pth files share PyTorch's extension.
		{"distutils-precedence.pth", "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'\n", nil},
		{"mypkg.pth", "/opt/mypkg/src\n../vendored — ünïcode path\n", nil},
		{"weights.pth", "\xff\xfe not text, not a model", []string{"models/unscannable"}},
	}
	for _, c := range cases {
		fs, err := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactFile, Path: c.name}, []byte(c.data))
		if err != nil {
			t.Fatal(err)
		}
		if got := rulesOf(fs, 0); !slices.Equal(got, c.want) {
			t.Errorf("%s %q: got %v, want %v", c.name, c.data, got, c.want)
		}
	}
}

// TestLegacyProtocolVersion: the legacy format's second pickle must say 1001.
func TestLegacyProtocolVersion(t *testing.T) {
	stream := func(body string) string { return "\x80\x02" + body + "." }
	for v, want := range map[string]bool{"M\xe9\x03": false, "M\xea\x03": true} {
		data := string(legacyMagic) + "." + stream(v) + stream("}") + stream("}") + stream("]")
		fs, _ := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Path: "old.pt"}, []byte(data))
		got := slices.Contains(rulesOf(fs, 0), "models/pickle-malformed")
		if got != want {
			t.Errorf("version %q: malformed=%v, want %v: %v", v, got, want, rulesOf(fs, 0))
		}
	}
}

// TestConcurrent: one Scanner scans many artifacts at once (go test -race).
func TestConcurrent(t *testing.T) {
	s := New()
	var files []string
	for _, d := range []string{"benign", "malicious", "bypass", "odd"} {
		files = append(files, walkFixtures(t, d)...)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range files {
				scanFile(t, s, p)
			}
		}()
	}
	wg.Wait()
}

// TestLegacyStorages: bytes after a legacy checkpoint's storages, or too few
// of them, are reported.
func TestLegacyStorages(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(fixtures, "benign", "legacy_state_dict.pt"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"appended":  {append(slices.Clone(orig), "\x80\x02cos\nsystem\n."...), "models/pickle-trailing-data"},
		"truncated": {orig[:len(orig)-4], "models/pickle-malformed"},
	}
	for name, c := range cases {
		fs, _ := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Path: "old.pt"}, c.data)
		if got := rulesOf(fs, 0); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s: got %v, want [%s]", name, got, c.want)
		}
	}
}

func zipOf(name, data string) string {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create(name)
	w.Write([]byte(data))
	zw.Close()
	return b.String()
}

// TestBypassCPython154848 rebuilds the reproduction from python/cpython#154848
// (FRAME divergence between _pickle.c reading a file and pickletools), with
// os.system in place of print.
func TestBypassCPython154848(t *testing.T) {
	p2 := "cos\nsystem\nVtrue\n\x85R"
	var p bytes.Buffer
	p.WriteString("\x80\x05N")
	p.WriteString("V" + strings.Repeat("a", 8192*16-17) + "\n0(")
	p.WriteString("\x95\x02\x00\x00\x00\x00\x00\x00\x00")
	p.WriteString("B\x07\x01\x00\x00\x00\x00")
	body := p2 + "("
	body += strings.Repeat("N", 256+5-len(body))
	p.WriteString(body + "1.")
	fs, _ := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Path: "bug.pkl"}, p.Bytes())
	got := rulesOf(fs, scanners.SeverityHigh)
	for _, w := range []string{"models/pickle-malformed", "models/pickle-dangerous-global"} {
		if !slices.Contains(got, w) {
			t.Errorf("want %s, got %v", w, got)
		}
	}
}

// TestSavedModelFieldOrder: a SavedModel whose first field is not
// saved_model_schema_version (field 1) is still read (protobuf readers take
// fields in any order); it escaped before without a finding.
func TestSavedModelFieldOrder(t *testing.T) {
	pbBytes := func(num int, data []byte) []byte {
		out := []byte{byte(num<<3 | 2)}
		out = binary.AppendUvarint(out, uint64(len(data)))
		return append(out, data...)
	}
	node := append(pbBytes(1, []byte("py")), pbBytes(2, []byte("PyFunc"))...)
	meta := pbBytes(2, pbBytes(1, node)) // graph_def.node
	for name, data := range map[string][]byte{
		"version last": append(pbBytes(2, meta), 0x08, 0x01),
		"no version":   pbBytes(2, meta),
	} {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "export/saved_model.pb", Size: int64(len(data))}
		if !New().Wants(a, data) {
			t.Errorf("%s: not wanted", name)
			continue
		}
		fs, _ := scanners.ScanBytes(context.Background(), New(), a, data)
		if got := rulesOf(fs, scanners.SeverityHigh); !slices.Equal(got, []string{"models/tf-unsafe-op"}) {
			t.Errorf("%s: got %v", name, got)
		}
	}
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "notes.pb"}
	if New().Wants(a, []byte("plain text, not protobuf\n")) {
		t.Errorf("text named .pb wanted")
	}
}

// TestOddPickles: streams CPython's unpickler accepts though no pickler
// writes them (a second PROTO, a FRAME an opcode crosses, a FRAME inside a
// FRAME) are medium; with something dangerous riding on them, high.
func TestOddPickles(t *testing.T) {
	frame := func(n uint64) string {
		b := binary.LittleEndian.AppendUint64([]byte{0x95}, n)
		return string(b)
	}
	cases := []struct {
		name, data string
		want       map[string]scanners.Severity
	}{
		{"second PROTO", "\x80\x04}\x80\x04.", map[string]scanners.Severity{"models/pickle-malformed": scanners.SeverityMedium}},
		{"FRAME crossed", "\x80\x04" + frame(2) + "X\x05\x00\x00\x00hello.", map[string]scanners.Severity{"models/pickle-malformed": scanners.SeverityMedium}},
		{"FRAME in FRAME", "\x80\x04" + frame(12) + frame(2) + "}.", map[string]scanners.Severity{"models/pickle-malformed": scanners.SeverityMedium}},
		// The unpickler refuses protocol 6 before anything runs: a file in no
		// known format.
		{"protocol 6", "\x80\x06}.", map[string]scanners.Severity{"models/unscannable": scanners.SeverityMedium}},
		{"protocol 6 later", "\x80\x04}\x80\x06.", map[string]scanners.Severity{"models/pickle-malformed": scanners.SeverityHigh}},
		{"FRAME crossed with a payload", "\x80\x04" + frame(2) + "cos\nsystem\nX\x04\x00\x00\x00true\x85R.",
			map[string]scanners.Severity{"models/pickle-malformed": scanners.SeverityHigh, "models/pickle-dangerous-global": scanners.SeverityCritical}},
		{"second PROTO with a payload", "\x80\x02\x80\x04cposix\nsystem\nX\x04\x00\x00\x00true\x85R.",
			map[string]scanners.Severity{"models/pickle-malformed": scanners.SeverityHigh, "models/pickle-dangerous-global": scanners.SeverityCritical}},
	}
	for _, c := range cases {
		fs, _ := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "x.pkl"}, []byte(c.data))
		got := map[string]scanners.Severity{}
		for _, f := range fs {
			got[f.RuleID] = max(got[f.RuleID], f.Severity)
		}
		if !maps.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
