package pins

import (
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// TestConformance runs the checks every scanner passes on the fuzz targets'
// seeds, each scanned as the files its fuzz function scans, and the demo
// fixtures.
func TestConformance(t *testing.T) {
	var seeds []scannertest.Seed
	for _, ft := range []struct {
		name  string
		paths []string
	}{
		{"FuzzShell", []string{"job.sbatch"}},
		{"FuzzDockerfile", []string{"Dockerfile"}},
		{"FuzzRequirements", []string{"requirements.txt"}},
		{"FuzzPython", []string{"train.py"}},
		{"FuzzYAML", []string{"k8s.yaml", ".github/workflows/ci.yml", ".gitlab-ci.yml", "chart/values.yaml", "overlay/kustomization.yaml"}},
		{"FuzzNotebook", []string{"nb.ipynb"}},
	} {
		seeds = append(seeds, scannertest.FuzzFiles(t, "fuzz_test.go", ft.name, ft.paths...)...)
	}
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	scannertest.Conformance(t, New(), seeds...)
}
