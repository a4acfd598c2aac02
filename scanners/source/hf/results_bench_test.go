//go:build !mlwarden_sbatch

package hf_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/scanners/cache"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// BenchmarkHubFileCache scans a repository of three 64 MiB pickles (read
// whole by the models check: cached), a 16 MiB safetensors file (its
// header read: never cached) and a few small files, served by hubtest on
// loopback, cold (an empty cache, filled by the scan) and warm (a second
// scan with a new pipeline on the filled cache), every check. It reports
// the bytes the Hub served per scan. docs/design/scale-out.md has the
// figures:
//
//	go test ./scanners/source/hf -run '^$' -bench BenchmarkHubFileCache -benchtime 1x -count 3
func BenchmarkHubFileCache(b *testing.B) {
	var files []hubtest.File
	for i := range 3 {
		_, pkl := maliciousPickle(64 << 20)
		pkl[len(pkl)-5] = byte('a' + i) // three objects, not one
		files = append(files, hubtest.Bytes(fmt.Sprintf("weights/part%d.pkl", i), pkl, true))
	}
	files = append(files,
		hubtest.Bytes("model.safetensors", safetensors(b, 16<<20), true),
		hubtest.Bytes("config.json", []byte(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}`), false),
		hubtest.Bytes("README.md", []byte("---\nlicense: apache-2.0\n---\n# a model\n"), false),
	)
	srv := hubtest.New(b)
	target := "hf:org/bench@" + srv.AddFiles("org/bench", files)
	scanOnce := func(b *testing.B, c *cache.Cache) int64 {
		sc, err := scan.New(scan.Options{Version: "bench", HF: hubOptions(srv), Image: image.Options{Cache: c}})
		if err != nil {
			b.Fatal(err)
		}
		defer sc.Close()
		srv.ResetStats()
		res, err := sc.Run(context.Background(), scan.Target{Ref: target})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Errors) > 0 {
			b.Fatalf("errors: %+v", res.Errors)
		}
		return srv.Stats().FileBytes
	}
	open := func(b *testing.B) *cache.Cache {
		c, err := cache.Open("fs", cache.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	b.Run("cold", func(b *testing.B) {
		var n int64
		for b.Loop() {
			b.StopTimer()
			c := open(b)
			b.StartTimer()
			n = scanOnce(b, c)
		}
		b.ReportMetric(float64(n)/(1<<20), "MiB-fetched")
	})
	b.Run("warm", func(b *testing.B) {
		c := open(b)
		scanOnce(b, c)
		var n int64
		for b.Loop() {
			n = scanOnce(b, c)
		}
		if c.Stats().Hits == 0 {
			b.Fatal("no hits")
		}
		b.ReportMetric(float64(n)/(1<<20), "MiB-fetched")
	})
}
