//go:build !mlwarden_sbatch

package hf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/scanners/source/ranged"
)

// BlockSize is the ranged reader's unit.
const BlockSize = ranged.BlockSize

// TestLargeRepositoryBytes scans a repository of a 4 GiB safetensors
// file, a 1 GiB PyTorch checkpoint (torch's own pickle and directory,
// 300 storages, sparse on disk) and the usual small files: it downloads
// less than 1% of it, none of the checkpoint's tensor data, and reports
// what the same files report on disk.
func TestLargeRepositoryBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 5 GiB of sparse files")
	}
	dir := t.TempDir()
	if err := hubtest.SparseSafetensors(filepath.Join(dir, "model.safetensors"), 4<<30, 291); err != nil {
		t.Fatal(err)
	}
	tensors, err := hubtest.InflateCheckpoint(filepath.Join("testdata", "checkpoint.pt"), filepath.Join(dir, "pytorch_model.bin"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	small := map[string]string{
		"config.json":             `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float16"}`,
		"generation_config.json":  `{"do_sample": true, "temperature": 0.6}`,
		"tokenizer_config.json":   `{"chat_template": "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"}`,
		"special_tokens_map.json": `{"bos_token": "<s>", "eos_token": "</s>"}`,
		"README.md":               "---\nlicense: llama3\n---\n# a model\n",
		".gitattributes":          "*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.bin filter=lfs diff=lfs merge=lfs -text\n",
	}
	for n, c := range small {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := hubtest.FromDirUnhashed(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	srv := hubtest.New(t)
	commit := srv.AddFiles("org/big", files)
	name := "hf:org/big@" + commit
	res := run(t, hubOptions(srv), nil, name, dir)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	sameFindings(t, name, findings(res, name), findings(res, dir), "")
	st := srv.Stats()
	t.Logf("repository %d bytes: downloaded %d bytes (%.4f%%) in %d requests (%d ranged); notes %q",
		total, st.FileBytes, 100*float64(st.FileBytes)/float64(total), st.Requests, st.RangeRequests, target(res, name).Notes)
	if st.FileBytes*100 >= total {
		t.Errorf("downloaded %d bytes, not under 1%% of %d", st.FileBytes, total)
	}
	for _, f := range files {
		var n int64
		for _, r := range srv.Served(f.Path) {
			n += r[1] - r[0]
		}
		t.Logf("%s: %d bytes in %d requests", f.Path, n, len(srv.Served(f.Path)))
	}
	// The checkpoint's tensor data is never fetched: not by the search for
	// the zip's end record, not by the read of its directory.
	var tensorBytes int64
	for _, r := range srv.Served("pytorch_model.bin") {
		for _, d := range tensors {
			if n := max(0, min(r[1], d[1])-max(r[0], d[0])); n > 0 {
				t.Errorf("request %v fetched %d bytes of the storage at %v", r, n, d)
				tensorBytes += n
			}
		}
	}
	t.Logf("tensor data fetched: %d bytes", tensorBytes)
	if notes := strings.Join(target(res, name).Notes, "\n"); !strings.Contains(notes, "of the repository's 5.0 GiB") {
		t.Errorf("notes do not say what was downloaded: %q", notes)
	}
}
