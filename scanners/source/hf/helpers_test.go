//go:build !mlwarden_sbatch

package hf_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// fixtures is the models check's fixture tree, written by the real
// libraries (fixtures/models/gen.py).
var fixtures = filepath.Join("..", "..", "..", "fixtures", "models")

// noEnv is an environment with nothing in it: no HF_TOKEN, no HF_HOME.
func noEnv(string) (string, bool) { return "", false }

// fakeToken is a Hub-token-shaped string made at test time from seed, so
// that no source file holds one.
func fakeToken(seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 42))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := []byte("hf_")
	for range 34 {
		b = append(b, letters[rng.IntN(len(letters))])
	}
	return string(b)
}

// modelRepo writes a model repository: the fixture tree (benign,
// malicious and bypass files from torch, numpy, joblib, sklearn, Keras,
// ONNX, GGUF) and the small files of a Hub repository — config.json,
// tokenizer_config.json with a chat template, a model card with a
// credential in it, remote code, requirements, a checksum manifest with
// one good and one bad entry, and a safetensors file larger than what is
// read whole.
func modelRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixtures)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "gen.py"))
	big := safetensors(t, 3<<20)
	// tokenizer.json: a large text file, read whole by the text checks.
	var vocab strings.Builder
	vocab.WriteString(`{"version": "1.0", "model": {"type": "BPE", "vocab": {`)
	for i := range 12000 {
		fmt.Fprintf(&vocab, "%q: %d, ", fmt.Sprintf("tok%05d", i), i)
	}
	vocab.WriteString(`"end": 12000}}}`)
	sum := sha256.Sum256(big)
	files := map[string]string{
		"config.json":           `{"architectures": ["CustomModel"], "auto_map": {"AutoModel": "modeling_custom.CustomModel"}, "model_type": "custom"}`,
		"tokenizer_config.json": `{"chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}", "tokenizer_class": "PreTrainedTokenizerFast"}`,
		"README.md":             "---\nlicense: apache-2.0\n---\n# custom model\n\nDownload with `HF_TOKEN=" + fakeToken(1) + " hf download org/custom`.\n",
		"modeling_custom.py":    "import os\nimport torch\n\nclass CustomModel(torch.nn.Module):\n    def load(self, p):\n        return torch.load(p)\n",
		"requirements.txt":      "torch>=2.0\ntransformers\n",
		"tokenizer.json":        vocab.String(),
		"SHA256SUMS":            hex.EncodeToString(sum[:]) + "  model.safetensors\n" + strings.Repeat("0", 64) + "  config.json\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// safetensors returns a valid safetensors file of about size bytes: one
// F32 tensor, with metadata.
func safetensors(t testing.TB, size int) []byte {
	t.Helper()
	n := (size - 256) / 4
	hdr := fmt.Sprintf(`{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}`, n, 4*n)
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	out := make([]byte, 8, 8+len(hdr)+4*n)
	for i := range 8 {
		out[i] = byte(uint64(len(hdr)) >> (8 * i))
	}
	out = append(out, hdr...)
	return append(out, make([]byte, 4*n)...)
}

// serve puts dir on a Hub as model repository id and returns the server
// and the commit.
func serve(t *testing.T, id, dir string) (*hubtest.Server, string) {
	t.Helper()
	files, err := hubtest.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := hubtest.New(t)
	return srv, srv.AddFiles(id, files)
}

// hubOptions reach srv with an empty environment.
func hubOptions(srv *hubtest.Server) hf.Options {
	return hf.Options{Endpoint: srv.Endpoint(), Getenv: noEnv}
}

// run scans targets through the pipeline with every check.
func run(t *testing.T, o hf.Options, checks []string, targets ...string) *scanners.Result {
	t.Helper()
	sc, err := scan.New(scan.Options{Checks: checks, HF: o, Image: image.Options{NoCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var ts []scan.Target
	for _, x := range targets {
		ts = append(ts, scan.Target{Ref: x})
	}
	res, err := sc.Run(context.Background(), ts...)
	if err != nil {
		t.Fatal(err)
	}
	return res.Result
}

// key is a finding without its target: what must be equal between the
// same files read from two places.
type key struct {
	rule, path, sev, msg, fp string
	line                     int
}

// keys are the findings with prefix taken off their paths and messages
// (and then their fingerprints, which hash the path, left out).
func keys(fs []scanners.Finding, prefix string) []key {
	var out []key
	for _, f := range fs {
		k := key{f.RuleID, f.Path, f.Severity.String(), f.Message, f.Fingerprint, f.Line}
		if prefix != "" {
			k.path = strings.TrimPrefix(k.path, prefix)
			k.msg = strings.ReplaceAll(k.msg, prefix, "")
			k.fp = ""
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b key) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return out
}

// sameFindings fails t unless got (its paths without prefix) and want
// hold the same findings, listing the differences.
func sameFindings(t *testing.T, what string, got, want []scanners.Finding, prefix string) {
	t.Helper()
	g, w := keys(got, prefix), keys(want, "")
	if prefix != "" {
		for i := range w {
			w[i].fp = ""
		}
	}
	if slices.Equal(g, w) {
		return
	}
	for _, k := range g {
		if !slices.Contains(w, k) {
			t.Errorf("%s: extra   %+v", what, k)
		}
	}
	for _, k := range w {
		if !slices.Contains(g, k) {
			t.Errorf("%s: missing %+v", what, k)
		}
	}
}

// findings returns the findings of target name, without the ones of the
// rules listed.
func findings(res *scanners.Result, name string, except ...string) []scanners.Finding {
	var out []scanners.Finding
	for _, f := range res.Findings {
		if f.Target == name && !slices.Contains(except, f.RuleID) {
			out = append(out, f)
		}
	}
	return out
}

func target(res *scanners.Result, name string) scanners.Target {
	for _, t := range res.Targets {
		if t.Name == name {
			return t
		}
	}
	return scanners.Target{}
}

// mustFiles maps each file under dir to its size.
func mustFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
