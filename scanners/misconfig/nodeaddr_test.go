package misconfig

import (
	"slices"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestNodeAddress: notebooks and servers bound to the node's own address
// are reachable by everyone on the cluster network, as on 0.0.0.0, with
// the same severities by authentication; and commands inside quoted
// strings are reported at their own lines.
func TestNodeAddress(t *testing.T) {
	crit, med, low := scanners.SeverityCritical, scanners.SeverityMedium, scanners.SeverityLow
	tests := []struct {
		name, path, content string
		want                []hit
	}{
		{"jupyter hostname -i", "nb.sbatch", "#!/bin/bash\n#SBATCH -N1\njupyter lab --ip=$(hostname -i) --no-browser\n", []hit{{"notebook-exposed", low, 3}}},
		{"jupyter HOSTNAME no token", "nb.sh", "jupyter notebook --ip=$HOSTNAME --NotebookApp.token=''\n", []hit{{"notebook-exposed", crit, 1}}},
		{"jupyter hostname", "nb.sh", "jupyter lab --ip \"$(hostname)\"\n", []hit{{"notebook-exposed", low, 1}}},
		{"jupyter via a variable", "nb.sh", "NODE=$(hostname -I | awk '{print $1}')\njupyter lab --ip=$NODE --ServerApp.token=\n", []hit{{"notebook-exposed", crit, 2}}},
		{"jupyter literal address", "nb.sh", "jupyter lab --ip=10.1.2.3\n", []hit{{"notebook-exposed", low, 1}}},
		{"jupyter loopback", "nb.sh", "jupyter lab --ip=127.0.0.1\njupyter lab --ip=localhost\njupyter lab --ip=::1\n", nil},
		{"jupyter other variable", "nb.sh", "jupyter lab --ip=$BIND\n", nil},
		{"vllm on the node address", "serve.sh", "vllm serve org/m --host $(hostname -i)\n", []hit{{"service-exposed", med, 1}}},
		{"sglang literal", "serve.sh", "python -m sglang.launch_server --model-path m --host 192.168.10.4\npython -m sglang.launch_server --model-path m --host 127.0.0.1\n", []hit{{"service-exposed", med, 1}}},
		{"quoted srun multi-line at its line", "serve.sbatch", "#!/bin/bash\n#SBATCH -N1\nsrun --overlap bash -c \"\n  python3 -m sglang.launch_server \\\n     --model-path Qwen/Qwen2-7B \\\n     --host 0.0.0.0 --trust-remote-code\n\" &\nsrun bash -c \"python -m vllm.entrypoints.openai.api_server --host 0.0.0.0\" &\nwait\n",
			[]hit{{"service-exposed", med, 6}, {"service-exposed", med, 8}}},
		{"ssh into a node", "nb.sh", "ssh node01 'jupyter lab --ip=$(hostname -i) --ServerApp.token=\"\"'\n", []hit{{"notebook-exposed", crit, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := scan(t, tc.path, tc.content)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeAddressValues(t *testing.T) {
	for v, want := range map[string]bool{
		"$(hostname -i)": true, "$(hostname)": true, "${HOSTNAME}": true, "${SLURMD_NODENAME}": true, "10.0.0.7": true,
		"fe80::1": true, "127.0.0.1": false, "::1": false, "0.0.0.0": false, "localhost": false, "${BIND}": false, "": false,
	} {
		if got := nodeAddress(v); got != want {
			t.Errorf("nodeAddress(%q) = %v, want %v", v, got, want)
		}
	}
}
