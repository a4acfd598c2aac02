package pins

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners/slurm"
)

// TestSbatchDirectives: the images of #SBATCH directives are read as sbatch
// reads them (scanners/slurm), in the cases where the shell's reading of a
// directive line says something else.
func TestSbatchDirectives(t *testing.T) {
	long := strings.Repeat("x", 100000)
	tests := []struct {
		name   string
		script string
		opts   []Option
		want   []string // "rule@line evidence", sorted
	}{
		// The demo's line 6: Slurm keeps "registry.example.com", a registry
		// with no image; misconfig/sbatch-value-truncated reports it.
		{name: "unescaped hash cuts to a registry", script: "#!/bin/bash\n#SBATCH --container-image=registry.example.com#nvidia/pytorch:24.01-py3\nsrun true\n"},
		{name: "unescaped hash cuts to a registry and port", script: "#!/bin/bash\n#SBATCH --container-image user@localhost:5000#ml/pytorch:1\nsrun true\n"},
		{name: "unescaped hash leaves an image", script: "#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04#was-20.04\nsrun true\n",
			want: []string{"image-not-digest@2 ubuntu:22.04"}},
		{name: "comment after a space", script: "#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04 # the base\nsrun true\n",
			want: []string{"image-not-digest@2 ubuntu:22.04"}},
		{name: "double quotes keep the hash", script: "#!/bin/bash\n#SBATCH --container-image=\"registry.example.com#nvidia/pytorch:24.01-py3\"\nsrun true\n",
			want: []string{"image-not-digest@2 registry.example.com#nvidia/pytorch:24.01-py3"}},
		{name: "single quotes inside a word", script: "#!/bin/bash\n#SBATCH --container-image='registry.example.com#nvidia/pytorch':24.01-py3\nsrun true\n",
			want: []string{"image-not-digest@2 registry.example.com#nvidia/pytorch:24.01-py3"}},
		{name: "no variable expansion", script: "#!/bin/bash\n#SBATCH --container-image=\"$IMAGE\"\nsrun true\n",
			want: []string{"image-variable@2 $IMAGE"}},
		{name: "unmatched quote: sbatch refuses the line", script: "#!/bin/bash\n#SBATCH --job-name=it's --container-image=ubuntu:22.04\nsrun true\n"},
		{name: "escaped hash", script: "#!/bin/bash\n#SBATCH --container-image=registry.example.com\\#nvidia/pytorch:24.01-py3\nsrun true\n",
			want: []string{"image-not-digest@2 registry.example.com#nvidia/pytorch:24.01-py3"}},
		{name: "after the first command", script: "#!/bin/bash\n#SBATCH -N1\nmodule load cuda/12.4\n#SBATCH --container-image=ubuntu:22.04\nsrun true\n"},
		{name: "before a command the shell cannot parse", script: "#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04\nif then\n",
			want: []string{"image-not-digest@2 ubuntu:22.04", "unparsed@3 "}},
		{name: "indented", script: "#!/bin/bash\n  #SBATCH --container-image=ubuntu:22.04\nsrun true\n"},
		{name: "in a heredoc written to a file", script: "#!/bin/bash\ncat > next.sbatch <<'EOF'\n#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04\nEOF\nsbatch next.sbatch\n"},
		{name: "in a heredoc run by bash", script: "#!/bin/bash\n#SBATCH -N1\nbash <<EOF\n#SBATCH --container-image=ubuntu:22.04\nEOF\n"},
		{name: "crlf", script: "#!/bin/bash\r\n#SBATCH --container-image=ubuntu:22.04\r\nsrun true\r\n",
			want: []string{"image-not-digest@2 ubuntu:22.04"}},
		{name: "long line", script: "#!/bin/bash\n#SBATCH --comment=" + long + " --container-image=ubuntu:22.04\nsrun true\n",
			want: []string{"image-not-digest@2 ubuntu:22.04"}},
		{name: "abbreviated option", script: "#!/bin/bash\n#SBATCH --container-im=ubuntu:22.04\nsrun true\n",
			want: []string{"image-not-digest@2 ubuntu:22.04"}},
		{name: "value of the option before", script: "#!/bin/bash\n#SBATCH --comment --container-image=ubuntu:22.04\nsrun true\n"},
		{name: "value on the next directive", script: "#!/bin/bash\n#SBATCH --container-image\n#SBATCH ubuntu:22.04\nsrun true\n",
			want: []string{"image-not-digest@2 ubuntu:22.04"}},
		{name: "slurm magic word", script: "#!/bin/bash\n#SLURM --container-image=ubuntu:22.04\nsrun true\n",
			want: []string{"image-not-digest@2 ubuntu:22.04"}},
		{name: "heterogeneous job", script: "#!/bin/bash\n#SBATCH --container-image=ubuntu:22.04\n#SBATCH hetjob\n#SBATCH --container-image=debian\nsrun true\n",
			want: []string{"image-latest@4 debian", "image-not-digest@2 ubuntu:22.04"}},
		{name: "unknown SPANK option with a value", script: "#!/bin/bash\n#SBATCH --site-opt on\n#SBATCH --container-image=ubuntu:22.04\nsrun true\n"},
		{name: "known SPANK option with a value", script: "#!/bin/bash\n#SBATCH --site-opt on\n#SBATCH --container-image=ubuntu:22.04\nsrun true\n",
			opts: []Option{WithSpank(slurm.SpankOption("site-opt", true))},
			want: []string{"image-not-digest@3 ubuntu:22.04"}},
		{name: "local squashfs", script: "#!/bin/bash\n#SBATCH --container-image=/shared/pt.sqsh\nsrun true\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, fs := scanText(t, "job.sbatch", tc.script, tc.opts...)
			var got []string
			for _, f := range fs {
				got = append(got, fmt.Sprintf("%s@%d %s", strings.TrimPrefix(f.RuleID, "pins/"), f.Line, f.Evidence))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRegistryHost(t *testing.T) {
	for ref, want := range map[string]bool{
		"registry.example.com":      true,
		"nvcr.io":                   true,
		"localhost":                 true,
		"localhost:5000":            true,
		"user@registry.example.com": true,
		"10.0.0.1:5000":             true,
		"ubuntu":                    false,
		"ubuntu:22.04":              false,
		"my.image:1.0":              false,
		"registry.example.com/x":    false,
		"registry.example.com#x":    false,
		"localhost:":                false,
		"":                          false,
	} {
		if got := registryHost(ref); got != want {
			t.Errorf("registryHost(%q) = %v, want %v", ref, got, want)
		}
	}
}
