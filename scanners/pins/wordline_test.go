package pins

import (
	"strconv"
	"strings"
	"testing"
)

// TestWordLines: a finding inside a command continued over several lines
// is reported at the line of the word it is about, so that SARIF regions
// and annotations point at the fix; the command's first line is named in
// the message.
func TestWordLines(t *testing.T) {
	tests := []struct {
		name, path, in string
		want           []string // rule@line
		first          int      // the line the message names, 0: none
	}{
		{name: "srun vllm, seventh line", path: "serve.sbatch",
			in:   "#!/bin/bash\n#SBATCH -N1\nsrun --container-image=nvcr.io/nvidia/pytorch@sha256:" + strings.Repeat("a", 64) + " \\\n  --gpus 4 \\\n  vllm serve m \\\n  --port 8000 \\\n  --tensor-parallel-size 4 \\\n  --max-model-len 8192 \\\n  --trust-remote-code\n",
			want: []string{"trust-remote-code@9"}, first: 3},
		{name: "pip install packages on their lines", path: "setup.sh",
			in:   "#!/bin/bash\npip install \\\n  torch==2.3.0 \\\n  transformers \\\n  accelerate==0.30.0\n",
			want: []string{"pip-unpinned@4"}, first: 2},
		{name: "image on a continuation", path: "run.sh",
			in:   "#!/bin/bash\ndocker run --rm \\\n  -v /data:/data \\\n  ubuntu:22.04 true\n",
			want: []string{"image-not-digest@4"}, first: 2},
		{name: "one line stays", path: "run.sh",
			in:   "#!/bin/bash\npip install torch\n",
			want: []string{"pip-unpinned@2"}},
		{name: "Dockerfile RUN continuation", path: "Dockerfile",
			in:   "FROM ubuntu@sha256:" + strings.Repeat("b", 64) + "\nRUN apt-get update && \\\n    pip install \\\n      numpy==1.26.4 \\\n      requests\n",
			want: []string{"pip-unpinned@5"}, first: 3},
		{name: "Python call over several lines", path: "load.py",
			in:   "from transformers import AutoModel\nm = AutoModel.from_pretrained(\n    \"org/m\",\n    revision=\"main\",\n    trust_remote_code=True,\n)\n",
			want: []string{"hf-revision@4", "trust-remote-code@5"}, first: 2},
		{name: "packages named together: the first one's line", path: "setup.sh",
			in:   "#!/bin/bash\napt-get install -y \\\n  curl \\\n  wget\n",
			want: []string{"os-package-unpinned@3"}, first: 2},
		{name: "clone url on a continuation", path: "get.sh",
			in:   "#!/bin/bash\ngit clone --depth 1 \\\n  https://github.com/o/r.git\n",
			want: []string{"git-clone-unpinned@3"}, first: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			skipDockerfileInHook(t, tc.path, tc.in)
			got, fs := scanText(t, tc.path, tc.in)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("got %v, want %v (%v)", got, tc.want, fs)
			}
			for _, f := range fs {
				named := strings.Contains(f.Message, "starts at line ")
				if tc.first == 0 && named || tc.first > 0 && !strings.Contains(f.Message, "starts at line "+strconv.Itoa(tc.first)+")") {
					t.Errorf("message %q should name line %d", f.Message, tc.first)
				}
			}
		})
	}
}
