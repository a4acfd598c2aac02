#!/usr/bin/env bash
# The pipeline benchmark of the foundation issue: a generated tree of 20,000
# small text files plus five 200 MB binaries, scanned with every check.
# Prints files/s and MB/s, the ratio of mlwarden's wall time to `cat` of the
# same text files (medians of RUNS runs, warm page cache), the bytes the
# process read (to show the binaries are not read whole), and peak RSS.
#
#   bench/pipeline.sh [FILES] [BIN_MB]      # defaults 20000 200; RUNS=5
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
FILES=${1:-20000}
BIN_MB=${2:-200}
RUNS=${RUNS:-5}
work=$(mktemp -d /tmp/mlwarden-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
tree=$work/tree
bin=$work/mlwarden

go build -o "$bin" ./cmd/mlwarden
echo "generating $FILES text files and 5 x $BIN_MB MB binaries in $tree" >&2
/usr/bin/python3 - "$tree" "$FILES" "$BIN_MB" <<'PY'
import os, sys
tree, n, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bodies = [
    ("train_%d.sh", "#!/bin/bash\nset -euo pipefail\nexport LR=3e-4\npython train.py --epochs 3 --lr $LR\n"),
    ("config_%d.yaml", "model:\n  name: resnet50\n  layers: [3, 4, 6, 3]\noptimizer: {name: adamw, lr: 0.0003}\n"),
    ("model_%d.py", "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"),
    ("notes_%d.md", "# Experiment\n\nBaseline run with the default schedule; see the dashboard.\n"),
]
for i in range(n):
    name, body = bodies[i % len(bodies)]
    d = os.path.join(tree, "d%03d" % (i % 200))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name % i), "w") as f:
        f.write(body)
chunk = os.urandom(1 << 20)
for i in range(5):
    with open(os.path.join(tree, "blob_%d.bin" % i), "wb") as f:
        f.write(b"\0")
        for _ in range(mb):
            f.write(chunk)
PY
text_list=$work/text.list
find "$tree" -type f ! -name '*.bin' > "$text_list"
text_bytes=$(xargs -a "$text_list" cat | wc -c)
total_bytes=$(du -sb "$tree" | cut -f1)

# Warm the page cache for both.
xargs -a "$text_list" cat >/dev/null; cat "$tree"/*.bin >/dev/null
t_cat=$(median xargs -a "$text_list" cat)
t_mlw=$(median "$bin" scan --fail-on none "$tree")

# Bytes read and peak RSS of one scan: read /proc/PID/io of the finished
# process before it is reaped.
read -r rchar rss < <(procstats "$bin" scan --fail-on none "$tree")

awk -v f="$FILES" -v tb="$text_bytes" -v all="$total_bytes" -v tc="$t_cat" -v tm="$t_mlw" -v rc="$rchar" -v rss="$rss" -v bmb="$BIN_MB" 'BEGIN {
	printf "tree: %d text files (%.1f MB) + 5 binaries of %d MB (%.0f MB in all)\n", f, tb/1e6, bmb, all/1e6
	printf "cat of the text files:  %.3f s (median of runs)\n", tc
	printf "mlwarden scan (all):    %.3f s (median of runs)\n", tm
	printf "files/s:                %.0f\n", (f+5)/tm
	printf "MB/s (tree size):       %.0f\n", all/1e6/tm
	printf "ratio mlwarden/cat:     %.2f\n", tm/tc
	printf "bytes read by mlwarden: %.1f MB of %.0f MB (binaries are not read whole)\n", rc/1e6, all/1e6
	printf "peak RSS:               %.1f MB\n", rss/1024
}'
