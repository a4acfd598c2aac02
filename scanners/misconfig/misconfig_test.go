package misconfig

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// hit is what a test expects: rule, severity and line.
type hit struct {
	rule string
	sev  scanners.Severity
	line int
}

func (h hit) String() string { return fmt.Sprintf("%s/%s@%d", h.rule, h.sev, h.line) }

func scan(t *testing.T, path, content string) []hit {
	t.Helper()
	fs, err := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: path}, []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	var hits []hit
	for _, f := range fs {
		hits = append(hits, hit{strings.TrimPrefix(f.RuleID, "misconfig/"), f.Severity, f.Line})
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Or(strings.Compare(a.rule, b.rule), cmp.Compare(a.line, b.line)) })
	return hits
}

func TestMisconfig(t *testing.T) {
	crit, high, med, low := scanners.SeverityCritical, scanners.SeverityHigh, scanners.SeverityMedium, scanners.SeverityLow
	tests := []struct {
		name, path, content string
		want                []hit
	}{
		{"jupyter open no auth", "run.sh", "#!/bin/bash\njupyter lab --ip=0.0.0.0 --NotebookApp.token='' --no-browser\n",
			[]hit{{"notebook-exposed", crit, 2}}},
		{"jupyter continuation and server app", "job.sbatch", "#!/bin/bash\n#SBATCH -N1\nsrun jupyter notebook \\\n  --ip 0.0.0.0 \\\n  --ServerApp.token= --ServerApp.password=''\n",
			[]hit{{"notebook-exposed", crit, 4}}},
		{"jupyter open with auth", "run.sh", "jupyter lab --ip=0.0.0.0 --port 8888\n", []hit{{"notebook-exposed", low, 1}}},
		{"jupyter token from variable is not empty", "run.sh", "jupyter lab --ip=0.0.0.0 --ServerApp.token=\"$TOKEN\"\n", []hit{{"notebook-exposed", low, 1}}},
		{"jupyter localhost no auth", "run.sh", "jupyter lab --ip=127.0.0.1 --IdentityProvider.token=''\n", []hit{{"notebook-exposed", med, 1}}},
		{"jupyter loopback with auth is fine", "run.sh", "jupyter lab --ip=127.0.0.1\n", nil},
		{"jupyter with password is not auth off", "run.sh", "jupyter lab --ip=0.0.0.0 --NotebookApp.token='' --NotebookApp.password='sha1:abc'\n", []hit{{"notebook-exposed", low, 1}}},
		{"python -m jupyter in bash -c", "run.sh", "bash -c \"python -m jupyter lab --ip='*' --ServerApp.token=''\"\n", []hit{{"notebook-exposed", crit, 1}}},
		{"dockerfile CMD json", "Dockerfile", "FROM python:3.12\nCMD [\"jupyter\", \"lab\", \"--ip=0.0.0.0\", \"--NotebookApp.token=\", \"--allow-root\"]\n",
			[]hit{{"notebook-exposed", crit, 2}}},
		{"jupyter config py", "jupyter_server_config.py", "c = get_config()\nc.ServerApp.ip = '0.0.0.0'\nc.ServerApp.token = ''\n",
			[]hit{{"notebook-exposed", crit, 3}}},
		{"jupyter config json", "jupyter_notebook_config.json", `{"NotebookApp": {"ip": "*", "token": "", "password": ""}}`,
			[]hit{{"notebook-exposed", crit, 0}}},
		{"docker privileged", "run.sh", "docker run --rm --privileged --gpus all img:1\n", []hit{{"privileged-container", high, 1}}},
		{"podman cap-add all", "run.sh", "podman run --cap-add ALL img\n", []hit{{"privileged-container", high, 1}}},
		{"seccomp unconfined", "run.sh", "docker run --security-opt seccomp=unconfined img\n", []hit{{"privileged-container", high, 1}}},
		{"docker without privileges", "run.sh", "docker run --gpus all --cap-add SYS_PTRACE img\n", nil},
		{"k8s privileged and sys_admin", "job.yaml", `apiVersion: batch/v1
kind: Job
spec:
  template:
    spec:
      containers:
      - name: a
        image: x
        securityContext:
          privileged: true
      - name: b
        image: y
        securityContext:
          allowPrivilegeEscalation: true
          capabilities:
            add: ["CAP_SYS_ADMIN"]
`, []hit{{"privileged-container", high, 10}, {"privileged-container", high, 16}}},
		{"k8s gpu bypass and hostPath", "pod.yaml", `apiVersion: v1
kind: Pod
spec:
  containers:
  - name: a
    image: x
    env:
    - name: NVIDIA_VISIBLE_DEVICES
      value: all
  - name: b
    image: y
    env:
    - name: NVIDIA_VISIBLE_DEVICES
      value: all
    resources:
      limits:
        nvidia.com/gpu: 1
  volumes:
  - name: dev
    hostPath:
      path: /dev/nvidia0
`, []hit{{"gpu-isolation-bypass", high, 8}, {"gpu-isolation-bypass", high, 21}}},
		{"k8s NVIDIA_VISIBLE_DEVICES with a DRA claim is not a bypass", "dra.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    image: x\n    env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n    resources: {claims: [{name: gpu}]}\n  - name: b\n    image: x\n    env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]\n",
			[]hit{{"gpu-isolation-bypass", high, 11}}},
		{"k8s jupyter via args and anchors", "nb.yaml", `x-args: &args ["--ip=0.0.0.0", "--ServerApp.token="]
apiVersion: v1
kind: Pod
spec:
  containers:
  - name: nb
    image: jupyter/base
    command: ["jupyter", "lab"]
    args: *args
`, []hit{{"notebook-exposed", crit, 8}}},
		{"chmod nvidia", "setup.sh", "chmod 666 /dev/nvidia*\nchmod 660 /dev/nvidia0\nchmod a+rw /dev/nvidiactl\n",
			[]hit{{"gpu-isolation-bypass", high, 1}, {"gpu-isolation-bypass", high, 3}}},
		{"ray dashboard", "ray.sh", "ray start --head --dashboard-host=0.0.0.0\n", []hit{{"service-exposed", med, 1}}},
		{"vllm", "serve.sh", "vllm serve meta/llama --host 0.0.0.0 --port 8000\npython -m vllm.entrypoints.openai.api_server --host 127.0.0.1\n", []hit{{"service-exposed", med, 1}}},
		{"tensorboard bind_all", "tb.sh", "tensorboard --logdir runs --bind_all\n", []hit{{"service-exposed", med, 1}}},
		{"mlflow and streamlit", "s.sh", "mlflow server -h 0.0.0.0\nstreamlit run app.py --server.address=0.0.0.0\n", []hit{{"service-exposed", med, 1}, {"service-exposed", med, 2}}},
		{"gradio env and python", "app.py", "import gradio as gr\ndemo.launch(server_name=\"0.0.0.0\", share=False)\n", []hit{{"service-exposed", med, 2}}},
		{"gradio env export", "env.sh", "export GRADIO_SERVER_NAME=0.0.0.0\n", []hit{{"service-exposed", med, 1}}},
		{"miner binary", "job.sh", "#!/bin/sh\n./xmrig --donate-level 1 -o pool:3333\n", []hit{{"crypto-miner", crit, 2}}},
		{"stratum url", "cfg.json", `{"pools": [{"url": "stratum+tcp://pool.example:4444"}]}`, []hit{{"crypto-miner", crit, 1}}},
		{"pool host", "x.conf", "host = xmr.2miners.com\n", []hit{{"crypto-miner", crit, 1}}},
		{"miner download", "Dockerfile", "FROM ubuntu:22.04\nRUN wget https://example.invalid/t-rex-0.26.8-linux.tar.gz && tar xf t-rex-0.26.8-linux.tar.gz\n", []hit{{"crypto-miner", crit, 2}}},
		{"miner named in docs is not a finding", "README.md", "We block xmrig and t-rex.\n", nil},
		{"an emoji's name is not a miner", "_emoji_codes.py", "EMOJI = {\n    \"t-rex\": \"\U0001f996\",\n    'xmrig': 1,\n}\n", nil},
		{"miner in a path", "entry.py", "subprocess.run([\"/opt/miners/xmrig\", \"-c\", cfg])\n", []hit{{"crypto-miner", crit, 1}}},
		{"miner as a setting", "job.env", "MINER=t-rex\n", []hit{{"crypto-miner", crit, 1}}},
		{"clean script", "train.sh", "#!/bin/bash\nset -euo pipefail\npython train.py --lr 3e-4\n", nil},
		{"broken shell still checked", "bad.sh", "if then fi (\njupyter lab --ip=0.0.0.0 --ServerApp.token=''\n", []hit{{"notebook-exposed", crit, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scan(t, tt.path, tt.content)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestImageConfig(t *testing.T) {
	cfg := `{"config":{"Env":["PATH=/usr/bin","JUPYTER_TOKEN="],"Cmd":["jupyter","lab","--ip=0.0.0.0"]},
	"history":[{"created_by":"/bin/sh -c #(nop) CMD [\"jupyter\"]"},{"created_by":"/bin/sh -c chmod 777 /dev/nvidia0"}]}`
	a := &scanners.Artifact{Kind: scanners.ArtifactImageConfig, Target: "img", Path: "/.image-config.json"}
	fs, err := scanners.ScanBytes(context.Background(), New(), a, []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, f := range fs {
		rules = append(rules, f.RuleID+":"+f.Severity.String())
		if !strings.Contains(f.Message, "[image") {
			t.Errorf("message does not say where in the image: %q", f.Message)
		}
	}
	slices.Sort(rules)
	want := []string{"misconfig/gpu-isolation-bypass:high", "misconfig/notebook-exposed:critical"}
	if !slices.Equal(rules, want) {
		t.Errorf("got %v, want %v", rules, want)
	}
}

func TestWorldAccessible(t *testing.T) {
	for mode, want := range map[string]bool{"666": true, "0777": true, "660": false, "0600": false, "a+rw": true, "o+r": true, "u+rw": false, "+rw": true, "go=r": true, "": false} {
		if got := worldAccessible(mode); got != want {
			t.Errorf("worldAccessible(%q) = %v, want %v", mode, got, want)
		}
	}
}

func FuzzScan(f *testing.F) {
	f.Add("run.sh", "jupyter lab --ip=0.0.0.0 --NotebookApp.token=''")
	f.Add("Dockerfile", "FROM x\nRUN <<EOF\nxmrig\nEOF\nCMD [\"a\"]")
	f.Add("a.yaml", "spec:\n  containers:\n  - env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n")
	f.Add("c.py", "c.ServerApp.token = ''\n")
	f.Add("job.sh", "#!/bin/bash\nN=$(hostname -i)\nsbatch <<EOF\n#!/bin/bash\nsrun vllm serve m \\\n  --host $N\nEOF\ncat <<'E' | sbatch\njupyter lab \\\n --ip=0.0.0.0\nE\nssh n <<-X\n\tray start --dashboard-host=0.0.0.0\n\tX\n")
	f.Add("Dockerfile", "FROM x\nRUN a && \\\n  # c\n  docker run \\\n   --privileged i\nCMD tensorboard \\\n --bind_all\n")
	f.Add("l.conf", "mlflow server \\\n -h 0.0.0.0 \\\n\n")
	f.Fuzz(func(t *testing.T, path, content string) {
		fs, _ := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Path: path}, []byte(content))
		lines := strings.Count(content, "\n") + 1
		for _, f := range fs {
			if f.Line < 0 || f.Line > lines {
				t.Fatalf("finding at line %d of %d: %+v", f.Line, lines, f)
			}
		}
	})
}

// TestEvidenceNamesOnlyTheMatch: other words of a flagged command line (an
// environment value, a token flag) never reach the evidence or the message.
func TestEvidenceNamesOnlyTheMatch(t *testing.T) {
	const secret = "s3cr3tVALUEnotshown"
	for _, tc := range []struct{ path, content string }{
		{"run.sh", "HF_TOKEN=" + secret + " docker run --privileged -e KEY=" + secret + " img\n"},
		{"nb.sh", "JUPYTER_PASSWORD=" + secret + " jupyter lab --ip=0.0.0.0 --ServerApp.token=" + secret + "\n"},
		{"x.sh", "./xmrig --user " + secret + " -o stratum+tcp://pool:1\n"},
		{"app.py", "demo.launch(server_name=\"0.0.0.0\", auth=(\"u\", \"" + secret + "\"))\n"},
	} {
		fs, err := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Path: tc.path}, []byte(tc.content))
		if err != nil || len(fs) == 0 {
			t.Fatalf("%s: %v %v", tc.path, fs, err)
		}
		for _, f := range fs {
			if strings.Contains(f.Evidence+f.Message, secret) {
				t.Errorf("%s: %s shows other words of the line: %q / %q", tc.path, f.RuleID, f.Evidence, f.Message)
			}
		}
	}
	cfg := `{"config":{"Env":["HF_TOKEN=` + secret + `"],"Cmd":["jupyter","lab","--ip=0.0.0.0","--ServerApp.token="]}}`
	fs, _ := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactImageConfig}, []byte(cfg))
	for _, f := range fs {
		if strings.Contains(f.Evidence+f.Message, secret) {
			t.Errorf("image config: %q", f.Evidence)
		}
	}
}

// BenchmarkScanText scans 1 MiB of ordinary source-like text, the common
// case inside images: no finding, every line read.
func BenchmarkScanText(b *testing.B) {
	var buf strings.Builder
	for buf.Len() < 1<<20 {
		buf.WriteString("def forward(self, x):\n    return self.linear(torch.relu(x)) * 2  # scaled\n")
	}
	data := []byte(buf.String())
	s := New()
	a := &scanners.Artifact{Path: "model.py"}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := scanners.ScanBytes(context.Background(), s, a, data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDeepNesting: 200,000 nested $( … ) overflowed the shell parser's
// goroutine stack, a fatal error (issue 15). Such a script is read line by
// line instead, and a command on it is still checked.
func TestDeepNesting(t *testing.T) {
	deep := "docker run --privileged img:1\n" + strings.Repeat("$(", 200_000) + "x" + strings.Repeat(")", 200_000) + "\n"
	if got := scan(t, "run.sh", deep); !slices.Contains(got, hit{"privileged-container", scanners.SeverityHigh, 1}) {
		t.Errorf("deep script: got %v", got)
	}
	if got := scan(t, "run.sh", strings.Repeat("$(", 200_000)+"x"+strings.Repeat(")", 200_000)+"\n"); len(got) != 0 {
		t.Errorf("deep script without a finding: got %v", got)
	}
}
