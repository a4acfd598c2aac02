package pins

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSbatchHeredoc: a job script submitted through a here-document
// (sbatch <<EOF, cat <<EOF | sbatch) or --wrap is a job script: its
// #SBATCH directives are read as sbatch reads them and its commands are
// checked, with the submitting shell's expansions when the delimiter is
// unquoted (a quoted 'EOF' is literal, and so is \$ in an unquoted one).
func TestSbatchHeredoc(t *testing.T) {
	pinned := "nvcr.io/nvidia/pytorch@sha256:" + strings.Repeat("c", 64)
	tests := []struct {
		name, in string
		want     []string // "rule@line evidence"
	}{
		{name: "directives and body", in: "#!/bin/bash\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --container-image=nvcr.io/nvidia/pytorch:24.01-py3\nsrun pip install vllm\nEOF\n",
			want: []string{"image-not-digest@4 nvcr.io/nvidia/pytorch:24.01-py3", "pip-unpinned@5 vllm"}},
		{name: "unquoted: the outer variable in a directive", in: "#!/bin/bash\nIMG=ubuntu:22.04\nsbatch -p gpu <<EOF\n#!/bin/bash\n#SBATCH --container-image=$IMG\nsrun true\nEOF\n",
			want: []string{"image-not-digest@5 ubuntu:22.04"}},
		{name: "unquoted: the outer variable in a command", in: "#!/bin/bash\nIMG=ubuntu:22.04\nsbatch <<EOF\n#!/bin/bash\n#SBATCH -N1\nsrun --container-image=$IMG true\nEOF\n",
			want: []string{"image-not-digest@6 ubuntu:22.04"}},
		{name: "quoted: literal, sbatch does not expand directives", in: "#!/bin/bash\nIMG=" + pinned + "\nsbatch <<'EOF'\n#!/bin/bash\n#SBATCH --container-image=$IMG\nsrun true\nEOF\n",
			want: []string{"image-variable@5 $IMG"}},
		{name: "escaped dollar: the job's own variable", in: "#!/bin/bash\nIMG=" + pinned + "\nsbatch <<EOF\n#!/bin/bash\n#SBATCH -N1\nIMG=debian:12\nsrun --container-image=\\$IMG true\nEOF\n",
			want: []string{"image-not-digest@7 debian:12"}},
		{name: "cat into sbatch", in: "#!/bin/bash\ncat <<EOF | sbatch --parsable\n#!/bin/bash\n#SBATCH --container-image=ubuntu\nsrun true\nEOF\n",
			want: []string{"image-latest@4 ubuntu"}},
		{name: "in a loop", in: "#!/bin/bash\nfor m in a b; do\n  sbatch <<EOF\n#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04\nsrun python train.py --model $m\nEOF\ndone\n",
			want: []string{"image-not-digest@5 ubuntu:22.04"}},
		{name: "written to a file, then submitted by name", in: "#!/bin/bash\ncat > next.sbatch <<'EOF'\n#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04\nEOF\nsbatch next.sbatch\n"},
		{name: "wrap", in: "#!/bin/bash\nsbatch -N1 --wrap \"srun --container-image=ubuntu:22.04 pip install vllm\"\n",
			want: []string{"image-not-digest@2 ubuntu:22.04", "pip-unpinned@2 vllm"}},
		{name: "wrap with =", in: "#!/bin/bash\nsbatch --wrap='pip install vllm'\n",
			want: []string{"pip-unpinned@2 vllm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, fs := scanText(t, "submit.sh", tc.in)
			var got []string
			for _, f := range fs {
				got = append(got, strings.TrimPrefix(f.RuleID, "pins/")+"@"+strconv.Itoa(f.Line)+" "+f.Evidence)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
