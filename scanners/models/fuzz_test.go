package models

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// seed adds every fixture whose name matches one of the suffixes.
func seed(f *testing.F, suffixes ...string) {
	dirs := []string{filepath.Join(fixtures, "benign"), filepath.Join(fixtures, "malicious"), filepath.Join(fixtures, "bypass"),
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
	return New(WithLimits(Limits{MaxDepth: 3, MaxExpand: 8 << 20, MaxMembers: 200, MaxInMemory: 1 << 20}), WithStrings(func(context.Context, *scanners.Artifact, []byte) []scanners.Finding { return nil }))
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
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.protobuf(nil, ra, n, "saved_model.pb") })
	})
}

// FuzzScan goes through content sniffing, so every format and archive path
// is reachable.
func FuzzScan(f *testing.F) {
	seed(f, "")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScan(t, data, func(sc *scan, ra *bytes.Reader, n int64) { sc.content(nil, ra, n, "fuzz", 0) })
	})
}
