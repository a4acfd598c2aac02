package vulns

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

func newScanner(t testing.TB, opts ...Option) *Scanner {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hits lists findings as "rule path:line advisory-or-evidence".
func hits(fs []scanners.Finding) []string {
	var out []string
	for _, f := range fs {
		id := f.Evidence
		for _, w := range strings.Fields(f.Message) {
			w = strings.Trim(w, ",.():")
			if strings.HasPrefix(w, "CVE-") || strings.HasPrefix(w, "NVIDIA-") {
				id = w
				break
			}
		}
		out = append(out, fmt.Sprintf("%s %s:%d %s %s", f.RuleID, f.Path, f.Line, f.Severity, id))
	}
	return out
}

func has(fs []scanners.Finding, rule, path, advisory string) bool {
	for _, f := range fs {
		if f.RuleID == rule && f.Path == path && (advisory == "" || strings.Contains(f.Message, advisory)) {
			return true
		}
	}
	return false
}

// dpkgStatus writes a dpkg status database as dpkg does: one paragraph per
// package, fields in dpkg's order.
func dpkgStatus(pkgs ...[3]string) string {
	var b strings.Builder
	for i, p := range pkgs {
		if i > 0 {
			b.WriteString("\n")
		}
		status := "install ok installed"
		if p[2] != "" {
			status = p[2]
		}
		fmt.Fprintf(&b, "Package: %s\nStatus: %s\nPriority: optional\nSection: utils\nInstalled-Size: 2560\nMaintainer: NVIDIA CORPORATION <cudatools@nvidia.com>\nArchitecture: amd64\nVersion: %s\nDepends: libc6 (>= 2.17)\nDescription: %s\n multi-line description\n .\n continued\n", p[0], status, p[1], p[0])
	}
	return b.String()
}

func toolkitParas(v string) [][3]string {
	return [][3]string{{"libnvidia-container1", v, ""}, {"libnvidia-container-tools", v, ""}, {"nvidia-container-toolkit-base", v, ""}, {"nvidia-container-toolkit", v, ""}}
}

func TestSources(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // rule path advisory
		none  bool     // no finding at all
	}{
		{name: "dpkg status, toolkit 1.16.1",
			files: map[string]string{"var/lib/dpkg/status": dpkgStatus(append([][3]string{{"bash", "5.2.15-2", ""}}, toolkitParas("1.16.1-1")...)...)},
			want: []string{RuleContainerToolkit + " var/lib/dpkg/status CVE-2024-0132", RuleContainerToolkit + " var/lib/dpkg/status CVE-2025-23266",
				RuleContainerToolkit + " var/lib/dpkg/status CVE-2026-24260"}},
		{name: "dpkg status, toolkit 1.19.1 (clean)",
			files: map[string]string{"var/lib/dpkg/status": dpkgStatus(toolkitParas("1.19.1-1")...)}, none: true},
		{name: "dpkg status, toolkit removed but config files left (clean)",
			files: map[string]string{"var/lib/dpkg/status": dpkgStatus([3]string{"nvidia-container-toolkit", "1.16.1-1", "deinstall ok config-files"})}, none: true},
		{name: "dpkg status, pre-release of the fix",
			files: map[string]string{"var/lib/dpkg/status": dpkgStatus([3]string{"nvidia-container-toolkit", "1.17.8~rc.1-1", ""})},
			want:  []string{RuleContainerToolkit + " var/lib/dpkg/status CVE-2025-23266"}},
		{name: "distroless status.d, driver 535.183.01",
			files: map[string]string{"var/lib/dpkg/status.d/nvidia-driver-535": dpkgStatus([3]string{"nvidia-driver-535", "535.183.01-0ubuntu1", ""})},
			want:  []string{RuleGPUDriver + " var/lib/dpkg/status.d/nvidia-driver-535 NVIDIA-5586"}},
		{name: "dist-info torch 2.5.1",
			files: map[string]string{"usr/local/lib/python3.11/site-packages/torch-2.5.1+cu124.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+cu124\nSummary: Tensors\n\nlong description Version: 9.9.9\n"},
			want:  []string{RulePythonPackage + " usr/local/lib/python3.11/site-packages/torch-2.5.1+cu124.dist-info/METADATA CVE-2025-32434"}},
		{name: "dist-info torch 2.10.0 (clean)",
			files: map[string]string{"site-packages/torch-2.10.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\n"}, none: true},
		{name: "egg-info mlflow",
			files: map[string]string{"lib/mlflow-2.2.0.egg-info/PKG-INFO": "Metadata-Version: 1.2\nName: mlflow\nVersion: 2.2.0\n"},
			want:  []string{RulePythonPackage + " lib/mlflow-2.2.0.egg-info/PKG-INFO CVE-2023-1177"}},
		{name: "conda-meta pytorch",
			files: map[string]string{"opt/conda/conda-meta/pytorch-2.1.0-py3.10_cuda12.1_0.json": `{"build": "py3.10_cuda12.1_0", "name": "pytorch", "version": "2.1.0", "files": ["lib/x"]}`},
			want:  []string{RulePythonPackage + " opt/conda/conda-meta/pytorch-2.1.0-py3.10_cuda12.1_0.json CVE-2025-32434"}},
		{name: "requirements pins",
			files: map[string]string{"requirements.txt": "# training\ntorch==2.5.1 ; python_version >= \"3.9\" \\\n    --hash=sha256:abc\ntransformers>=4.0\nvllm[tensorizer]==0.8.4\nray==2.52.0\n-r other.txt\n"},
			want:  []string{RulePythonPackage + " requirements.txt:2 CVE-2025-32434", RulePythonPackage + " requirements.txt:5 CVE-2025-32444"}},
		{name: "requirements ranges and fixed pins (clean)",
			files: map[string]string{"requirements.txt": "torch>=2.0\ntorch==2.6.*\ntransformers==4.48.0\nmlflow~=2.1\n"}, none: true},
		{name: "poetry.lock",
			files: map[string]string{"poetry.lock": "[[package]]\nname = \"numpy\"\nversion = \"1.26.4\"\n\n[[package]]\nname = \"transformers\"\nversion = \"4.35.2\"\n"},
			want:  []string{RulePythonPackage + " poetry.lock:6 CVE-2023-6730"}},
		{name: "uv.lock",
			files: map[string]string{"uv.lock": "version = 1\n[[package]]\nname = \"gradio\"\nversion = \"6.15.2\"\nsource = { registry = \"https://pypi.org/simple\" }\n"},
			want:  []string{RulePythonPackage + " uv.lock:3 CVE-2026-49119"}},
		{name: "pylock.toml",
			files: map[string]string{"pylock.toml": "lock-version = \"1.0\"\n[[packages]]\nname = \"ray\"\nversion = \"2.51.1\"\n"},
			want:  []string{RulePythonPackage + " pylock.toml:3 CVE-2025-62593"}},
		{name: "Pipfile.lock",
			files: map[string]string{"Pipfile.lock": "{\n  \"default\": {\n    \"mlflow\": {\n      \"version\": \"==2.9.1\"\n    }\n  },\n  \"develop\": {}\n}\n"},
			want:  []string{RulePythonPackage + " Pipfile.lock:3 CVE-2023-6753"}},
		{name: "pyproject",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"x\"\ndependencies = [\n  \"torch==2.5.1\",\n  \"numpy\",\n]\n[tool.poetry.dependencies]\nvllm = \"0.8.4\"\nray = \"^2.0\"\n"},
			want:  []string{RulePythonPackage + " pyproject.toml:4 CVE-2025-32434", RulePythonPackage + " pyproject.toml:8 CVE-2025-32444"}},
		{name: "conda environment",
			files: map[string]string{"environment.yml": "name: train\nchannels: [pytorch]\ndependencies:\n  - python=3.10\n  - pytorch::pytorch=2.1.0=py3.10_cuda12.1_0\n  - pip:\n    - transformers==4.47.1\n"},
			want:  []string{RulePythonPackage + " environment.yml:5 CVE-2025-32434", RulePythonPackage + " environment.yml:7 CVE-2024-11392"}},
		{name: "GPU Operator Helm values",
			files: map[string]string{"gpu-operator/values.yaml": "operator:\n  repository: nvcr.io/nvidia\n  image: gpu-operator\n  version: v24.6.1\ntoolkit:\n  enabled: true\n  repository: nvcr.io/nvidia/k8s\n  image: container-toolkit\n  version: v1.17.3-ubuntu20.04\ndevicePlugin:\n  repository: nvcr.io/nvidia\n  image: k8s-device-plugin\n  version: v0.17.2\nmigManager:\n  repository: nvcr.io/nvidia/cloud-native\n  image: k8s-mig-manager\n  version: v0.12.1-ubuntu20.04\ndriver:\n  repository: nvcr.io/nvidia\n  image: driver\n  version: \"550.127.05\"\n"},
			want: []string{RuleGPUOperator + " gpu-operator/values.yaml:4 CVE-2024-0132", RuleContainerToolkit + " gpu-operator/values.yaml:9 CVE-2025-23359",
				RuleGPUOperator + " gpu-operator/values.yaml:13 CVE-2025-23266", RuleGPUOperator + " gpu-operator/values.yaml:17 CVE-2025-23267",
				RuleGPUDriver + " gpu-operator/values.yaml:21 NVIDIA-5614"}},
		{name: "GPU Operator Helm values, current (clean)",
			files: map[string]string{"values.yaml": "operator:\n  repository: nvcr.io/nvidia\n  image: gpu-operator\n  version: v26.7.0\ntoolkit:\n  repository: nvcr.io/nvidia/k8s\n  image: container-toolkit\n  version: v1.20.0\ndevicePlugin:\n  repository: nvcr.io/nvidia\n  image: k8s-device-plugin\n  version: v0.18.0\n"}, none: true},
		{name: "rendered DaemonSet image tag",
			files: map[string]string{"rendered.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: nvidia-container-toolkit-daemonset}\nspec:\n  template:\n    spec:\n      containers:\n        - name: toolkit\n          image: \"nvcr.io/nvidia/k8s/container-toolkit:v1.17.3-ubuntu20.04\"\n"},
			want:  []string{RuleContainerToolkit + " rendered.yaml:9 CVE-2025-23359"}},
		{name: "device plugin chart values (repository and tag)",
			files: map[string]string{"values.yaml": "image:\n  repository: nvcr.io/nvidia/k8s-device-plugin\n  tag: v0.17.0\n"},
			want:  []string{RuleGPUOperator + " values.yaml:3 CVE-2025-23266"}},
		{name: "GPU Operator Chart.yaml",
			files: map[string]string{"gpu-operator/Chart.yaml": "apiVersion: v2\nname: gpu-operator\nversion: v24.9.1\nappVersion: v24.9.1\ndescription: NVIDIA GPU Operator\n"},
			want:  []string{RuleGPUOperator + " gpu-operator/Chart.yaml:4 CVE-2025-23359"}},
		{name: "development Chart.yaml (clean)",
			files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: gpu-operator\nversion: v1.0.0-devel\nappVersion: devel\n"}, none: true},
		{name: "umbrella chart depending on the GPU Operator",
			files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n  - name: gpu-operator\n    version: v25.3.1\n    repository: https://helm.ngc.nvidia.com/nvidia\n"},
			want:  []string{RuleGPUOperator + " Chart.yaml:6 CVE-2025-23266"}},
		{name: "ClusterPolicy",
			files: map[string]string{"clusterpolicy.yaml": "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\nspec:\n  toolkit:\n    repository: nvcr.io/nvidia/k8s\n    image: container-toolkit\n    version: v1.17.7-ubuntu20.04\n"},
			want:  []string{RuleContainerToolkit + " clusterpolicy.yaml:8 CVE-2025-23266"}},
		{name: "host file",
			files: map[string]string{"node.yaml": "os: linux\ndriver_version: 550.54.15\ncuda_driver_version: \"12.4\"\ngpus:\n  - {name: NVIDIA H100 80GB HBM3, brand: nvidia, compute_capability: \"9.0\", mig: false}\ncontainer_toolkit_mode: legacy\ncontainer_toolkit_version: 1.16.1\n"},
			want: []string{RuleGPUDriver + " node.yaml:2 NVIDIA-5551", RuleDriverUnsupported + " node.yaml:2 NVIDIA-5821",
				RuleContainerToolkit + " node.yaml:7 CVE-2024-0132"}},
		{name: "host file, patched (clean)",
			files: map[string]string{"node.json": "{\"os\": \"linux\", \"driver_version\": \"580.159.03\", \"gpus\": [], \"container_toolkit_version\": \"1.20.0\"}\n"}, none: true},
		{name: "inventory with a host file beside it",
			files: map[string]string{
				"inv/inventory.yaml":  "pools:\n  - name: a100\n    host_file: pools/a100.yaml\n  - name: h100\n    host: {driver_version: 580.159.03, container_toolkit_version: 1.17.7}\n",
				"inv/pools/a100.yaml": "driver_version: 535.309.01\n",
			},
			want: []string{RuleContainerToolkit + " inv/inventory.yaml:5 CVE-2025-23266"}},
		{name: "unrelated YAML (clean)",
			files: map[string]string{"ci.yaml": "image: python:3.12\nsteps: [build, test]\n"}, none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string][]byte{}
			for p, c := range tt.files {
				files[p] = []byte(c)
			}
			fs := scannertest.Scan(t, files, newScanner(t))
			if tt.none && len(fs) > 0 {
				t.Fatalf("want no findings, got:\n%s", strings.Join(hits(fs), "\n"))
			}
			for _, w := range tt.want {
				parts := strings.SplitN(w, " ", 3)
				path, line, _ := strings.Cut(parts[1], ":")
				found := false
				for _, f := range fs {
					if f.RuleID == parts[0] && f.Path == path && strings.Contains(f.Message, parts[2]) && (line == "" || fmt.Sprint(f.Line) == line) {
						found = true
					}
				}
				if !found {
					t.Errorf("want %s, got:\n%s", w, strings.Join(hits(fs), "\n"))
				}
			}
		})
	}
}

func TestFindingMessage(t *testing.T) {
	fs := scannertest.Scan(t, map[string][]byte{"var/lib/dpkg/status": []byte(dpkgStatus(toolkitParas("1.16.1-1")...))}, newScanner(t))
	var f *scanners.Finding
	for i := range fs {
		if strings.Contains(fs[i].Message, "affected by CVE-2024-0132") {
			f = &fs[i]
		}
	}
	if f == nil {
		t.Fatalf("no CVE-2024-0132 finding: %v", hits(fs))
	}
	for _, want := range []string{"NVIDIA Container Toolkit 1.16.1-1", "dpkg packages libnvidia-container1, libnvidia-container-tools, nvidia-container-toolkit-base, nvidia-container-toolkit",
		"critical (CVSS 9.0)", "Fixed in 1.16.2 (NVIDIA GPU Operator 24.6.2)", "CDI mode", "https://nvidia.custhelp.com/app/answers/detail/a_id/5582"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message lacks %q: %s", want, f.Message)
		}
	}
	if f.Severity != scanners.SeverityCritical || f.Line != 1 || f.Evidence != "nvidia-container-toolkit 1.16.1-1" {
		t.Errorf("finding %+v", f)
	}
	// One finding per advisory: the four packages of one release are one.
	n := 0
	for _, x := range fs {
		if strings.Contains(x.Message, "affected by CVE-2024-0132,") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d findings for CVE-2024-0132", n)
	}
	// A medium advisory keeps its severity.
	for _, x := range fs {
		if strings.Contains(x.Message, "affected by CVE-2024-0133") && x.Severity != scanners.SeverityMedium {
			t.Errorf("CVE-2024-0133 at %s", x.Severity)
		}
	}
}

func TestUnconfirmedRowSaysSo(t *testing.T) {
	fs := scannertest.Scan(t, map[string][]byte{"requirements.txt": []byte("ray==2.51.1\n")}, newScanner(t))
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "Range not confirmed: ") {
		t.Fatalf("%v", fs)
	}
}

func TestDriverBranches(t *testing.T) {
	for _, c := range []struct {
		driver      string
		unsupported bool
		advisories  []string // some of those it must report
		clean       bool
	}{
		{driver: "535.309.01", clean: true},
		{driver: "580.159.03", clean: true},
		{driver: "595.71.05", clean: true},
		{driver: "610.43.02", clean: true}, // a branch newer than the table
		{driver: "535.288.01", advisories: []string{"NVIDIA-5821"}},
		{driver: "535.104.05", advisories: []string{"NVIDIA-5520", "NVIDIA-5551", "NVIDIA-5821"}},
		{driver: "545.29.06", unsupported: true},
		{driver: "550.163.01", unsupported: true}, // fixed for 5630, skipped from 5670 on
		{driver: "470.256.02", unsupported: true},
	} {
		t.Run(c.driver, func(t *testing.T) {
			fs := scannertest.Scan(t, map[string][]byte{"host.yaml": []byte("driver_version: " + c.driver + "\n")}, newScanner(t))
			if c.clean && len(fs) > 0 {
				t.Fatalf("want none: %v", hits(fs))
			}
			if got := has(fs, RuleDriverUnsupported, "host.yaml", ""); got != c.unsupported {
				t.Errorf("unsupported branch: %v, want %v: %v", got, c.unsupported, hits(fs))
			}
			for _, a := range c.advisories {
				if !has(fs, RuleGPUDriver, "host.yaml", a+" ") {
					t.Errorf("no %s: %v", a, hits(fs))
				}
			}
		})
	}
	fs := scannertest.Scan(t, map[string][]byte{"host.yaml": []byte("driver_version: 545.29.06\n")}, newScanner(t))
	if len(fs) != 1 || fs[0].Severity != scanners.SeverityMedium || !strings.Contains(fs[0].Message, "R545") ||
		!strings.Contains(fs[0].Message, "NVIDIA-5821 (https://nvidia.custhelp.com/app/answers/detail/a_id/5821) fixes R535 535.309.01 or later") {
		t.Fatalf("%+v", fs)
	}
}

func TestTorchLoadJoin(t *testing.T) {
	train := "import torch\n\n# torch.load(old) in a comment\nstate = torch.load(\n    'ckpt.pt',\n    weights_only=True,\n)\nother = torch.load('b.pt')\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string // path:line of join findings
	}{
		{"affected torch and calls", map[string]string{"requirements.txt": "torch==2.5.1\n", "src/train.py": train}, []string{"src/train.py:4", "src/train.py:8"}},
		{"fixed torch", map[string]string{"requirements.txt": "torch==2.6.0\n", "src/train.py": train}, nil},
		{"no call", map[string]string{"requirements.txt": "torch==2.5.1\n", "src/train.py": "import torch\n"}, nil},
		{"calls in library code only", map[string]string{"requirements.txt": "torch==2.5.1\n", "venv/lib/python3.11/site-packages/x/y.py": train}, nil},
		{"notebook", map[string]string{"pyproject.toml": "[project]\ndependencies = [\"torch==2.4.0\"]\n", "nb.ipynb": "{\"cells\": [{\"source\": [\"m = torch.load(p, weights_only=True)\\n\"]}]}\n"}, []string{"nb.ipynb:1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string][]byte{}
			for p, d := range c.files {
				files[p] = []byte(d)
			}
			var got []string
			var msgs []string
			for _, f := range scannertest.Scan(t, files, newScanner(t)) {
				if f.RuleID == RuleTorchLoadWeights {
					got = append(got, fmt.Sprintf("%s:%d", f.Path, f.Line))
					msgs = append(msgs, f.Message)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("join findings %v, want %v", got, c.want)
			}
			if len(msgs) == 2 {
				if !strings.Contains(msgs[0], "passes weights_only=True") || !strings.Contains(msgs[1], "pins/torch-load-unsafe") ||
					!strings.Contains(msgs[0], "torch 2.5.1 (requirement torch==2.5.1, requirements.txt:1)") {
					t.Errorf("messages:\n%s", strings.Join(msgs, "\n"))
				}
			}
		})
	}
}

func TestAdvisoriesFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "extra.yaml")
	if err := os.WriteFile(f, []byte("version: 1\nadvisories:\n"+
		"  - {id: CVE-2099-0001, severity: low, impact: test row, source: \"https://example.invalid/x\", affected: [{ecosystem: PyPI, package: numpy, ranges: [{fixed: \"2.0.0\"}]}]}\n"+
		"  - {id: CVE-2025-32434, severity: low, impact: overridden, source: \"https://example.invalid/y\", affected: [{ecosystem: PyPI, package: torch, ranges: [{fixed: \"1.0\"}]}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newScanner(t, WithAdvisoriesFile(f))
	fs := scannertest.Scan(t, map[string][]byte{"requirements.txt": []byte("numpy==1.26.4\ntorch==2.5.1\n")}, s)
	if !has(fs, RulePythonPackage, "requirements.txt", "CVE-2099-0001") || has(fs, RulePythonPackage, "requirements.txt", "CVE-2025-32434") {
		t.Fatalf("%v", hits(fs))
	}
	if !has(fs, RulePythonPackage, "requirements.txt", "CVE-2026-24747") {
		t.Errorf("built-in rows dropped: %v", hits(fs))
	}
	os.WriteFile(f, []byte("version: 1\nadvisories: [{id: x}]\n"), 0o644)
	if _, err := New(WithAdvisoriesFile(f)); err == nil || !strings.Contains(err.Error(), f) {
		t.Errorf("bad file: %v", err)
	}
	if _, err := New(WithAdvisoriesFile(filepath.Join(dir, "missing.yaml"))); err == nil {
		t.Error("missing file accepted")
	}
}

func TestTagVersion(t *testing.T) {
	for tag, want := range map[string]string{
		"v1.17.3-ubuntu20.04": "1.17.3", "v1.20.0": "1.20.0", "v1.18.0-packaging": "1.18.0", "v1.17.0-rc.1": "1.17.0~rc.1",
		"550.54.15-5.15.0-1042-azure-ubuntu22.04": "550.54.15", "v26.7.0": "26.7.0", "latest": "", "main": "", "v1.0.0-devel": "", "": "", "7": "",
	} {
		p, ok := tagVersion("x", tag)
		if ok != (want != "") || p.Version != want {
			t.Errorf("%q: %q %v, want %q", tag, p.Version, ok, want)
		}
	}
	for ref, want := range map[string]string{
		"nvcr.io/nvidia/k8s/container-toolkit:v1.17.3-ubuntu20.04": "nvidia-container-toolkit 1.17.3",
		"nvcr.io/nvidia/gpu-operator:v24.9.0@sha256:abc":           "gpu-operator 24.9.0",
		"nvcr.io/nvidia/driver:550.54.15-ubuntu22.04":              "nvidia-driver 550.54.15",
		"nvidia/k8s-device-plugin:v0.14.1":                         "k8s-device-plugin 0.14.1",
		"example.com/acme/driver:1.2.3":                            "",
		"nvcr.io/nvidia/pytorch:24.01-py3":                         "",
		"nvcr.io/nvidia/k8s/container-toolkit@sha256:abc":          "",
		"registry.local:5000/nvidia/gpu-operator":                  "",
	} {
		p, ok := imageRef(ref)
		got := ""
		if ok {
			got = p.Name + " " + p.Version
		}
		if got != want {
			t.Errorf("%s: %q, want %q", ref, got, want)
		}
	}
}
