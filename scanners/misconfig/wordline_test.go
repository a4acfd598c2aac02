package misconfig

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestWordLines: a finding about one word of a command continued over
// several lines is reported at that word's line, whatever read the
// command (shell, a Dockerfile's RUN, a manifest's args, other text), and
// its message names the line the command starts on.
func TestWordLines(t *testing.T) {
	tests := []struct {
		name, path, in string
		want           string // rule@line
		first          int    // the line the message names, 0: none
	}{
		{name: "srun vllm, --host on the seventh line", path: "serve.sbatch",
			in:   "#!/bin/bash\n#SBATCH -N1\nsrun --gpus 4 \\\n  python -m vllm.entrypoints.openai.api_server \\\n  --model m \\\n  --port 8000 \\\n  --tensor-parallel-size 4 \\\n  --max-model-len 8192 \\\n  --host 0.0.0.0\n",
			want: "service-exposed@9", first: 3},
		{name: "one line", path: "serve.sh", in: "vllm serve m --host 0.0.0.0\n", want: "service-exposed@1"},
		{name: "docker run --privileged on a continuation", path: "run.sh",
			in:   "docker run --rm \\\n  --gpus all \\\n  --privileged \\\n  img true\n",
			want: "privileged-container@3", first: 1},
		{name: "Dockerfile RUN continuation", path: "Dockerfile",
			in:   "FROM x\nRUN apt-get update && \\\n    # a comment BuildKit drops\n    chmod 666 \\\n      /dev/nvidia0\n",
			want: "gpu-isolation-bypass@4"},
		{name: "Dockerfile CMD continuation", path: "Dockerfile",
			in:   "FROM x\nCMD tensorboard \\\n  --logdir /runs \\\n  --bind_all\n",
			want: "service-exposed@4", first: 2},
		{name: "Dockerfile RUN heredoc", path: "Dockerfile",
			in:   "# syntax=docker/dockerfile:1\nFROM x\nRUN <<EOF\nset -e\n# start it\ndocker run \\\n  --privileged img\nEOF\n",
			want: "privileged-container@7", first: 6},
		{name: "Dockerfile heredocs after a continued RUN", path: "Dockerfile",
			in:   "# syntax=docker/dockerfile:1\nFROM x\nRUN cat <<A > /a.sh && \\\n  python3 <<B\nxmrig --donate-level 1\nA\nsubprocess.run([\"vllm\", \"serve\", \"m\", \"--host\", \"0.0.0.0\"])\nB\n",
			want: "crypto-miner@5 service-exposed@7"},
		{name: "manifest args, one a line", path: "pod.yaml",
			in:   "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: s\n    image: x\n    command:\n    - vllm\n    - serve\n    - m\n    - --host\n    - 0.0.0.0\n",
			want: "service-exposed@11", first: 8},
		{name: "text continuation", path: "launch.conf",
			in:   "mlflow server \\\n  --backend-store-uri sqlite:///m.db \\\n  -h 0.0.0.0\n",
			want: "service-exposed@3", first: 1},
		{name: "jupyter in a sh -c string, --ip on its line", path: "nb.sh",
			in:   "bash -c \"\n  jupyter lab --port 8888 \\\n    --ip=0.0.0.0\n\"\n",
			want: "notebook-exposed@3", first: 2},
		{name: "miner in a sh -c string on its line", path: "job.sh",
			in:   "bash -c \"\n  cd /tmp\n  echo start \\\n    && ./xmrig -o pool:3333\n\"\n",
			want: "crypto-miner@4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: tc.path}, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, fmt.Sprintf("%s@%d", strings.TrimPrefix(f.RuleID, "misconfig/"), f.Line))
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %v, want %s (%v)", got, tc.want, fs)
			}
			named := strings.Contains(fs[0].Message, "starts at line ")
			if tc.first == 0 && named || tc.first > 0 && !strings.Contains(fs[0].Message, fmt.Sprintf("starts at line %d)", tc.first)) {
				t.Errorf("message %q should name line %d", fs[0].Message, tc.first)
			}
		})
	}
}

// TestHeredocCommands: the here-document a shell runs — the job script of
// sbatch <<EOF, what bash, srun bash or ssh read — is checked as commands,
// at the file's lines, expanded as the submitting shell expands it.
func TestHeredocCommands(t *testing.T) {
	tests := []struct {
		name, in string
		want     []hit
	}{
		{"sbatch job script", "#!/bin/bash\nsbatch <<EOF\n#!/bin/bash\n#SBATCH -N1\nsrun jupyter lab --ip=0.0.0.0 --ServerApp.token=''\nEOF\n",
			[]hit{{"notebook-exposed", scanners.SeverityCritical, 5}}},
		{"cat into sbatch", "#!/bin/bash\ncat <<'EOF' | sbatch\n#!/bin/bash\nvllm serve m \\\n  --host 0.0.0.0\nEOF\n",
			[]hit{{"service-exposed", scanners.SeverityMedium, 5}}},
		{"srun bash", "#!/bin/bash\nsrun --overlap bash <<'EOF'\npython -m sglang.launch_server --host 0.0.0.0\nEOF\n",
			[]hit{{"service-exposed", scanners.SeverityMedium, 3}}},
		{"the outer node address", "#!/bin/bash\nNODE=$(hostname -i)\nssh gpu01 <<EOF\ntensorboard --logdir runs --host $NODE\nEOF\n",
			[]hit{{"service-exposed", scanners.SeverityMedium, 4}}},
		{"a file written is not run here", "#!/bin/bash\ncat > serve.sh <<'EOF'\nvllm serve m --host 0.0.0.0\nEOF\n", nil},
		{"python reads Python", "#!/bin/bash\npython - <<'EOF'\nprint('vllm serve m --host 0.0.0.0')\nEOF\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scan(t, "submit.sh", tc.in); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
