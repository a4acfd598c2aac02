package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// notebook returns an nbformat 4 notebook as Jupyter writes it (indent 1),
// with tok in cell 1's source and in cell 2's stream output.
func notebook(tok string) string {
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{"kernelspec": map[string]string{"name": "python3"}},
		"cells": []any{
			map[string]any{"cell_type": "markdown", "metadata": map[string]any{}, "source": []string{"# Fine-tune\n", "Log in first.\n"}},
			map[string]any{"cell_type": "code", "metadata": map[string]any{}, "execution_count": 1, "outputs": []any{},
				"source": []string{"from huggingface_hub import login\n", "login(token=\"" + tok + "\")\n"}},
			map[string]any{"cell_type": "code", "metadata": map[string]any{}, "execution_count": 2,
				"source": []string{"!env | grep TOKEN"},
				"outputs": []any{
					map[string]any{"output_type": "stream", "name": "stdout", "text": []string{"PATH=/usr/bin\n", "HF_TOKEN=" + tok + "\n"}},
					map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": map[string]any{
						"image/png": strings.Repeat("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk", 20)}},
				}},
		},
	}
	b, _ := json.MarshalIndent(nb, "", " ")
	return string(b)
}

func lineOf(content, needle string, nth int) int {
	for i, l := range strings.Split(content, "\n") {
		if strings.Contains(l, needle) {
			if nth == 0 {
				return i + 1
			}
			nth--
		}
	}
	return -1
}

func TestNotebook(t *testing.T) {
	s := newScanner(t)
	tok := "hf_" + newFake(7).str(alnum, 34)
	nb := notebook(tok)
	fs := scan(t, s, "notebooks/finetune.ipynb", nb)
	if len(fs) != 2 {
		t.Fatalf("got %d findings, want 2 (source and output): %v", len(fs), ids(fs))
	}
	want := []struct {
		line int
		msg  string
	}{
		{lineOf(nb, tok, 0), "cell 1 (source)"},
		{lineOf(nb, tok, 1), "cell 2 (output)"},
	}
	for i, w := range want {
		f := fs[i]
		if f.RuleID != "secrets/huggingface-token" || f.Path != "notebooks/finetune.ipynb" || f.Line != w.line || !strings.Contains(f.Message, w.msg) {
			t.Errorf("finding %d = %s line %d %q; want line %d with %q", i, f.RuleID, f.Line, f.Message, w.line, w.msg)
		}
	}
	// Minified notebooks (one line) still work.
	var v any
	json.Unmarshal([]byte(nb), &v)
	min, _ := json.Marshal(v)
	if fs := scan(t, s, "x.ipynb", string(min)); len(fs) != 2 || fs[0].Line != 1 {
		t.Errorf("minified notebook: %v", ids(fs))
	}
	// Escaped quotes inside cell source are decoded, not left to end tokens.
	if fs := scan(t, s, "broken.ipynb", "{not json "+tok+"\n"); len(fs) != 1 {
		t.Errorf("non-JSON .ipynb scanned as text: %v", ids(fs))
	}
}

func TestImageConfig(t *testing.T) {
	s := newScanner(t)
	g := newFake(11)
	hf := "hf_" + g.str(alnum, 34)
	wb := g.hex(40)
	cfg := fmt.Sprintf(`{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/bin","HF_TOKEN=%s"],"Cmd":["python","serve.py"]},
"history":[{"created_by":"/bin/sh -c #(nop) ADD file:abc in / "},{"created_by":"RUN |1 WANDB_API_KEY=%s /bin/sh -c pip install -r requirements.txt # buildkit"}]}`, hf, wb)
	a := &scanners.Artifact{Kind: scanners.ArtifactImageConfig, Target: "registry:example/img:1", TargetKind: scanners.KindImage, Path: "config.json"}
	fs, err := scanners.ScanBytes(context.Background(), s, a, []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 {
		t.Fatalf("got %v, want 2 findings", ids(fs))
	}
	got := fs[0].Message + "\n" + fs[1].Message
	for _, w := range []string{"ENV HF_TOKEN", "build history (step 1"} {
		if !strings.Contains(got, w) {
			t.Errorf("messages lack %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, hf) || strings.Contains(got, wb) {
		t.Error("secret in message")
	}
}

func TestPatchLines(t *testing.T) {
	s := newScanner(t)
	tok := "gsk_" + newFake(3).str(alnum, 52)
	a := &scanners.Artifact{Kind: scanners.ArtifactPatch, Target: "git:repo", TargetKind: scanners.KindRepo, Path: "run.sh",
		Commit: "0123456789abcdef0123456789abcdef01234567", Lines: []int{10, 42}, Note: "removed before HEAD"}
	fs, err := scanners.ScanBytes(context.Background(), s, a, []byte("echo hi\nexport GROQ_API_KEY="+tok+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Line != 42 || fs[0].Commit != a.Commit || !strings.Contains(fs[0].Message, "removed before HEAD") {
		t.Fatalf("got %+v", fs)
	}
}

func TestFalseAlarms(t *testing.T) {
	s := newScanner(t)
	g := newFake(5)
	cases := map[string]string{
		"placeholders.sh":  "export HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nexport HF_TOKEN=<YOUR_TOKEN>\nexport HF_TOKEN=${HF_TOKEN}\nexport WANDB_API_KEY=$WANDB_API_KEY\n",
		"env.py":           "token = os.environ[\"HF_TOKEN\"]\napi_key = os.environ.get(\"OPENAI_API_KEY\")\nkey = os.getenv('WANDB_API_KEY')\n",
		"docs.md":          "Set `AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE` and `aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`.\n",
		"checksums.txt":    "sha256:" + g.hex(64) + "  model.safetensors\n" + g.hex(40) + "  tokenizer.json\n",
		"requirements.txt": "git+https://github.com/wandb/wandb.git@" + g.hex(40) + "\ntorch==2.5.1 --hash=sha256:" + g.hex(64) + "\n",
		"runs.yaml":        "run_id: " + g.uuid() + "\nexperiment_id: " + g.uuid() + "\ncommit: " + g.hex(40) + "\n",
		"config.json":      `{"_name_or_path": "meta-llama/Llama-3-8B", "torch_dtype": "bfloat16", "vocab_size": 128256}`,
	}
	for name, content := range cases {
		if fs := scan(t, s, name, content); len(fs) != 0 {
			t.Errorf("%s: false alarms %v: %v", name, ids(fs), fs[0].Message)
		}
	}
	// Weights are not the secrets check's.
	w := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "model.safetensors"}
	if s.Wants(w, []byte(`{"__metadata__":{}}`)) {
		t.Error("wants a .safetensors file")
	}
	if s.Wants(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: "blob.gz"}, []byte("\x1f\x8b\x08\x00\x00\x00")) {
		t.Error("wants compressed content")
	}
}

func TestUserConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "extra.toml")
	os.WriteFile(p, []byte(`
[extend]
disabledRules = ["huggingface-access-token"]
[[rules]]
id = "internal-cluster-token"
description = "Internal cluster token"
regex = '''\b(clu_[a-z0-9]{24})\b'''
keywords = ["clu_"]
severity = "critical"
`), 0o644)
	s := newScanner(t, WithConfigFile(p))
	g := newFake(9)
	fs := scan(t, s, "a.sh", "X=clu_"+g.str("abcdefghijklmnopqrstuvwxyz0123456789", 24)+"\nHF=hf_"+g.str(alnum, 34)+"\n")
	if len(fs) != 1 || fs[0].RuleID != "secrets/internal-cluster-token" || fs[0].Severity != scanners.SeverityCritical {
		t.Fatalf("got %v", ids(fs))
	}
	// The built-in scanner is unaffected.
	if fs := scan(t, newScanner(t), "a.sh", "HF=hf_"+g.str(alnum, 34)+"\n"); len(fs) != 1 {
		t.Errorf("built-in rules changed by a user file: %v", ids(fs))
	}
	os.WriteFile(p, []byte("[[rules]]\nid = \"bad\"\nregex = '''(unclosed'''\n"), 0o644)
	if _, err := New(WithConfigFile(p)); err == nil {
		t.Error("invalid regex accepted")
	}
	if _, err := New(WithConfigFile(filepath.Join(dir, "missing.toml"))); err == nil {
		t.Error("missing file accepted")
	}
}

func TestLargeFile(t *testing.T) {
	s := newScanner(t, WithMaxBytes(6<<20))
	tok := "r8_" + newFake(4).str(alnum, 37)
	var b bytes.Buffer
	for b.Len() < 5<<20 {
		b.WriteString("step=1 loss=0.123 lr=0.0001 grad_norm=1.5\n")
	}
	lines := bytes.Count(b.Bytes(), []byte{'\n'})
	b.WriteString("REPLICATE_API_TOKEN=" + tok + "\n")
	for b.Len() < 7<<20 {
		b.WriteString("step=2 loss=0.120 lr=0.0001 grad_norm=1.4\n")
	}
	fs, err := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: "train.log"}, b.Bytes())
	if len(fs) != 2 || fs[0].Line != lines+1 || fs[1].RuleID != "secrets/file-too-large" {
		t.Fatalf("got %v, want token at line %d and file-too-large", ids(fs), lines+1)
	}
	// The limit is not a clean pass: the run exits 2.
	if !errors.Is(err, scanners.ErrIncomplete) {
		t.Errorf("error %v, want ErrIncomplete", err)
	}
}

// TestHostileText: content shaped to slip past a text scanner (issue 15)
// is still scanned, and every case has a negative twin without the token.
func TestHostileText(t *testing.T) {
	s := newScanner(t)
	g := newFake(15)
	tok := "hf_" + g.str(alnum, 34)
	line := "export HF_TOKEN=" + tok + "\n"
	// A long line whose token straddles the 4 MiB chunk edge and a 64 KiB
	// window edge.
	long := func(at int, tail string) string {
		return strings.Repeat("a", at-len(" HF_TOKEN=")-10) + " HF_TOKEN=" + tail + strings.Repeat("b", 1<<20) + "\n"
	}
	cases := []struct {
		name, path, content string
		line                int
	}{
		{"NUL in front", "job.sh", "x\x00\n" + line, 2},
		{"NULs spread in a script", "job.sh", strings.Repeat("echo hi\x00\n", 50) + line, 51},
		{"binary file", "tool", "\x7fELF\x02\x01\x01" + string(make([]byte, 4096)) + line + string(make([]byte, 4096)), 0},
		{"10 MB single line", "data.json", strings.Repeat("x", 10<<20) + " HF_TOKEN=" + tok + " y\n", 1},
		{"token across the 4 MiB chunk edge", "data.json", long(chunkSize, tok+" "), 1},
		{"token across a window edge", "data.json", long(maxFragment, tok+" "), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := scan(t, s, c.path, c.content)
			if len(fs) != 1 || fs[0].RuleID != "secrets/huggingface-token" || fs[0].Line != c.line || fs[0].Secret != tok {
				t.Fatalf("got %v (%+v), want the token at line %d", ids(fs), fs, c.line)
			}
			neg := strings.ReplaceAll(c.content, tok, strings.Repeat("z", len(tok)))
			if fs := scan(t, s, c.path, neg); len(fs) != 0 {
				t.Errorf("negative twin: %v", ids(fs))
			}
		})
	}
}

func TestScanBytesHandOver(t *testing.T) {
	s := newScanner(t)
	tok := "nvapi-" + newFake(8).str(urlTok, 64)
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: "ckpt/pytorch_model.bin"}
	fs := s.ScanBytes(context.Background(), a, []byte(tok))
	if len(fs) != 1 || fs[0].Line != 0 || fs[0].Path != "ckpt/pytorch_model.bin" || fs[0].Secret != tok || !strings.Contains(fs[0].Message, "string inside") {
		t.Fatalf("got %+v", fs)
	}
}

func TestConcurrent(t *testing.T) {
	s := newScanner(t)
	tok := "hf_" + newFake(1).str(alnum, 34)
	done := make(chan int)
	for range 8 {
		go func() {
			n := 0
			for range 20 {
				fs, _ := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Path: "a.sh"}, []byte("HF_TOKEN="+tok+"\n"))
				n += len(fs)
			}
			done <- n
		}()
	}
	for range 8 {
		if n := <-done; n != 20 {
			t.Errorf("got %d findings, want 20", n)
		}
	}
}

// FuzzNotebook feeds arbitrary bytes to the notebook decoder and the scanner:
// neither may panic, and decoded lines must map to lines of the input.
func FuzzNotebook(f *testing.F) {
	f.Add([]byte(notebook("hf_" + newFake(1).str(alnum, 34))))
	f.Add([]byte(`{"cells":[{"source":["a\n","b"],"outputs":[{"data":{"image/png":"AAAA","text/plain":["x"]}}]}]}`))
	f.Add([]byte(`[[[[[[[[[[[[`))
	f.Add([]byte(`{"cells":[{"source":"x\"y"}]}`))
	s := newScanner(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		text, lines, err := decodeNotebook(data)
		wantText, wantLines, wantErr := decodeNotebookV1(data)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(text, wantText) || !slices.Equal(lines, wantLines) {
			t.Fatalf("decoders disagree on %q:\nnow %q %v %v\nencoding/json %q %v %v", data, text, lines, err, wantText, wantLines, wantErr)
		}
		if err == nil {
			n := bytes.Count(data, []byte{'\n'}) + 1
			if c := bytes.Count(text, []byte{'\n'}); c != len(lines) {
				t.Fatalf("%d text lines, %d mapped", c, len(lines))
			}
			for _, l := range lines {
				if l.fileLine < 1 || l.fileLine > n {
					t.Fatalf("line %d outside 1..%d", l.fileLine, n)
				}
			}
		}
		s.scanNotebook(context.Background(), &scanners.Artifact{Path: "f.ipynb"}, data)
	})
}

// TestFragmentBoundary puts a private key across the point where text is cut
// into detector fragments: it must be found whole, at the right line.
func TestFragmentBoundary(t *testing.T) {
	s := newScanner(t)
	key := newFake(12).pemKey()
	for _, pad := range []int{fragmentSize - 200, fragmentSize - 40, fragmentSize + 10} {
		var b strings.Builder
		n := 0
		for b.Len() < pad {
			b.WriteString("# filler line\n")
			n++
		}
		b.WriteString(key)
		b.WriteString("tail\n")
		fs := scan(t, s, "deploy/id_key", b.String())
		if len(fs) != 1 || fs[0].RuleID != "secrets/private-key" || fs[0].Line != n+1 {
			t.Errorf("pad %d: got %v, want private-key at line %d", pad, ids(fs), n+1)
		}
	}
}

// FuzzScan feeds any bytes as a file (text, binary, one long line) to the
// check with a small size limit: it must not panic, and its findings are on
// lines of the input.
func FuzzScan(f *testing.F) {
	tok := "hf_" + newFake(3).str(alnum, 34)
	f.Add([]byte("x\x00\nexport HF_TOKEN=" + tok + "\n"))
	f.Add([]byte("\x7fELF\x00\x00\x00\x00HF_TOKEN=" + tok + "\x00"))
	f.Add([]byte(strings.Repeat("a", 70<<10) + " HF_TOKEN=" + tok))
	s, err := New(WithMaxBytes(256 << 10))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: "f.sh"}, data)
		if err != nil && !errors.Is(err, scanners.ErrIncomplete) {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte{'\n'}) + 1
		for _, f := range fs {
			if f.Line < 0 || f.Line > lines {
				t.Fatalf("finding at line %d of %d", f.Line, lines)
			}
		}
	})
}

// TestStringsPassPEMMarkers: PEM header and footer constants in a binary,
// with other strings between them, are not a private key (each string is
// scanned on its own); a key stored whole in one string is.
func TestStringsPassPEMMarkers(t *testing.T) {
	s := newScanner(t)
	bin := func(parts ...string) string {
		var b strings.Builder
		b.WriteString("\x7fELF\x02\x01\x01")
		b.Write(make([]byte, 2048))
		for _, p := range parts {
			b.WriteString(p)
			b.Write(make([]byte, 16))
		}
		return b.String()
	}
	markers := bin("-----BEGIN RSA PRIVATE KEY-----", strings.Repeat("some_symbol_name_", 8), "-----END RSA PRIVATE KEY-----")
	if fs := scan(t, s, "libcrypto.so", markers); len(fs) != 0 {
		t.Errorf("PEM markers reported: %v", ids(fs))
	}
	key := "-----BEGIN EC PRIVATE KEY-----" + newFake(21).str(b64, 160) + "-----END EC PRIVATE KEY-----"
	if fs := scan(t, s, "libcrypto.so", bin(key)); len(fs) != 1 || fs[0].RuleID != "secrets/private-key" {
		t.Errorf("key in one string: %v", ids(fs))
	}
}

// TestImageConfigAsDockerfile: an image's config is read as the Dockerfile
// that built it would be (issue 16): a credential in the exec-form CMD, in a
// label, in BuildKit's and the legacy builder's history entries is found,
// as it is in the Dockerfile.
func TestImageConfigAsDockerfile(t *testing.T) {
	s := newScanner(t)
	g := newFake(17)
	key := g.str(alnum, 32)
	dockerfile := "FROM python:3.12\nCMD [\"python\", \"serve.py\", \"--api-key\", \"" + key + "\"]\n"
	if fs := scan(t, s, "Dockerfile", dockerfile); len(fs) != 1 {
		t.Fatalf("Dockerfile: %v", ids(fs))
	}
	hf := "hf_" + g.str(alnum, 34)
	gh := "ghp_" + g.str(alnum, 36)
	wb := g.hex(40)
	cfg := map[string]any{
		"config": map[string]any{
			"Cmd":    []string{"python", "serve.py", "--api-key", key},
			"Labels": map[string]string{"org.example.deploy-token": hf},
		},
		"history": []map[string]string{
			{"created_by": "/bin/sh -c #(nop)  ENV GITHUB_TOKEN=" + gh},
			{"created_by": `CMD ["python" "serve.py" "--api-key" "` + key + `"]`},
			{"created_by": "RUN |1 WANDB_API_KEY=" + wb + " /bin/sh -c pip install -r requirements.txt # buildkit"},
		},
	}
	data, _ := json.Marshal(cfg)
	a := &scanners.Artifact{Kind: scanners.ArtifactImageConfig, Target: "registry:example/img:1", TargetKind: scanners.KindImage, Path: "/.image-config.json"}
	fs, err := scanners.ScanBytes(context.Background(), s, a, data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"in the image's CMD":    "secrets/generic-api-key",
		"in the image's label":  "secrets/huggingface-token",
		"build history (step 0": "secrets/github-pat",
		"build history (step 1": "secrets/generic-api-key",
		"build history (step 2": "secrets/wandb-api-key-legacy",
	}
	for place, rule := range want {
		found := false
		for _, f := range fs {
			found = found || f.RuleID == rule && strings.Contains(f.Message, place)
		}
		if !found {
			t.Errorf("%s %s not found in %v", rule, place, ids(fs))
		}
	}
	if len(fs) != len(want) {
		t.Errorf("%d findings, want %d: %v", len(fs), len(want), ids(fs))
	}
	for _, tc := range []struct{ in, want string }{
		{"/bin/sh -c #(nop)  CMD [\"python\" \"x.py\"]", `CMD ["python", "x.py"]`},
		{"/bin/sh -c pip install x", "RUN pip install x"},
		{"|2 A=b C=d /bin/sh -c make", "ARG A=b\nARG C=d\nRUN make"},
		{"RUN /bin/sh -c make # buildkit", "RUN make"},
		{"ENV X=y", "ENV X=y"},
		{"COPY . /app # buildkit", "COPY . /app"},
	} {
		if got := historyInstructions(tc.in); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestStringsPassOffset: a token in a binary's printable strings is
// reported with its byte offset in the file.
func TestStringsPassOffset(t *testing.T) {
	s := newScanner(t)
	tok := "ghp_" + newFake(44).str(alnum, 36)
	bin := append(append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 4089)...), []byte("GITHUB_TOKEN="+tok)...)
	fs := scan(t, s, "tool", string(append(bin, make([]byte, 64)...)))
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "at byte offset 4096 ") {
		t.Errorf("%v", fs)
	}
}
