package vulns

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// FuzzScan feeds a file name and content to the check: every parser
// (dpkg status, Python metadata, requirements, lock files, pyproject,
// conda files, YAML manifests and host files, torch.load calls). Findings
// must be the check's, at a line of the file; nothing may panic.
func FuzzScan(f *testing.F) {
	f.Add("var/lib/dpkg/status", "Package: libnvidia-container1\nStatus: install ok installed\nVersion: 1.16.1-1\n\nPackage: nvidia-driver-535\nVersion: 535.104.05-0ubuntu1\n")
	f.Add("var/lib/dpkg/status.d/nvidia-container-toolkit", "Package: nvidia-container-toolkit\nVersion: 1.17.8~rc.1-1\n")
	f.Add("x/torch-2.5.1.dist-info/METADATA", "Name: torch\nVersion: 2.5.1+cu124\n\nbody")
	f.Add("y/mlflow.egg-info/PKG-INFO", "Name: mlflow\nVersion: 2.2.0\n")
	f.Add("opt/conda/conda-meta/pytorch-2.1.0.json", `{"name": "pytorch", "version": "2.1.0"}`)
	f.Add("requirements.txt", "torch==2.5.1 \\\n  --hash=sha256:0\nvllm[a]===0.8.4 ; python_version > '3'\n")
	f.Add("poetry.lock", "[[package]]\nname = \"transformers\"\nversion = \"4.35.2\"\n")
	f.Add("pylock.toml", "[[packages]]\nname = \"ray\"\nversion = \"2.51.1\"\n")
	f.Add("Pipfile.lock", `{"default": {"mlflow": {"version": "==2.9.1"}}}`)
	f.Add("pyproject.toml", "[project]\ndependencies = [\"torch==2.5.1\"]\n[tool.poetry.dependencies]\nvllm = {version = \"0.8.4\"}\n")
	f.Add("environment.yml", "dependencies:\n  - pytorch::pytorch=2.1.0=py3\n  - pip: [gradio==6.15.2]\n")
	f.Add("values.yaml", "toolkit:\n  repository: nvcr.io/nvidia/k8s\n  image: container-toolkit\n  version: v1.17.3-ubuntu20.04\n---\nimage: &a nvcr.io/nvidia/gpu-operator:v24.9.0\nx: *a\n")
	f.Add("Chart.yaml", "name: gpu-operator\nversion: v24.9.1\ndependencies: [{name: nvidia-device-plugin, version: v0.17.0}]\n")
	f.Add("host.yaml", "driver_version: 545.29.06\ncontainer_toolkit_version: 1.16.1\n")
	f.Add("inventory.yaml", "pools:\n  - {name: a, host_file: ../../etc/passwd}\n  - {name: b, host: {driver_version: 535.104.05}}\n")
	f.Add("host.json", `{"driver_version": "550.54.15", "gpus": []}`)
	f.Add("train.py", "x = torch.load(f, weights_only=True\n")
	s, err := New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path, content string) {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "fuzz", Path: path}
		fs, err := scanners.ScanBytes(context.Background(), s, a, []byte(content))
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		fin, err := s.FinishTarget(context.Background(), scanners.Target{Name: "fuzz"})
		if err != nil {
			t.Fatalf("finish: %v", err)
		}
		lines := bytes.Count([]byte(content), []byte("\n")) + 1
		ids := []string{}
		for _, r := range s.Rules() {
			ids = append(ids, r.ID)
		}
		for _, f := range append(fs, fin...) {
			if !slices.Contains(ids, f.RuleID) || f.Message == "" || f.Line < 0 || f.Line > lines {
				t.Fatalf("finding %+v (of %d lines)", f, lines)
			}
		}
	})
}
