package vulns

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// BenchmarkScanDpkg: a dpkg status of 3,000 packages (the size of a CUDA
// development image's), four of them the container toolkit's.
func BenchmarkScanDpkg(b *testing.B) {
	pkgs := toolkitParas("1.16.1-1")
	for i := range 3000 {
		pkgs = append(pkgs, [3]string{fmt.Sprintf("libexample%d", i), "1.2.3-4ubuntu0.1", ""})
	}
	data := []byte(dpkgStatus(pkgs...))
	s := newScanner(b)
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "bench", Path: "/var/lib/dpkg/status"}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		fs, err := scanners.ScanBytes(context.Background(), s, a, data)
		if err != nil || len(fs) == 0 {
			b.Fatal(err, len(fs))
		}
	}
}

// BenchmarkScanYAML: 1 MiB of Kubernetes YAML that names no NVIDIA
// component, the common case.
func BenchmarkScanYAML(b *testing.B) {
	doc := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: web, image: registry.example/web:1.0}\n---\n"
	data := []byte(strings.Repeat(doc, (1<<20)/len(doc)))
	s := newScanner(b)
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "bench", Path: "manifests.yaml"}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := scanners.ScanBytes(context.Background(), s, a, data); err != nil {
			b.Fatal(err)
		}
	}
}
