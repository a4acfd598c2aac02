#!/usr/bin/env bash
# "A file both hashed and scanned by other checks is read once" (signatures
# issue). Generates a model directory — SMALL text files (configs,
# tokenizers, code) and WEIGHTS safetensors files of WEIGHT_MB each, all
# listed in a SHA256SUMS written by sha256sum, plus a sidecar per weights
# file — and scans it with every check. Prints the bytes the process read
# (/proc/PID/io rchar) against the directory's size, and the wall time
# against `sha256sum -c` of the same manifest (medians of RUNS, warm cache).
# With BASE=<git ref>, the same figures for that commit's binary too.
#
#   bench/hashonce.sh [SMALL] [WEIGHT_MB] [WEIGHTS]   # defaults 5000 256 4; RUNS=3
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
SMALL=${1:-5000}
WEIGHT_MB=${2:-256}
WEIGHTS=${3:-4}
RUNS=${RUNS:-3}
work=$(mktemp -d /tmp/mlwarden-hashonce.XXXXXX)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
model=$work/model

go build -o "$work/mlwarden" ./cmd/mlwarden
if [ -n "${BASE:-}" ]; then
	git worktree add --detach "$work/base" "$BASE" >/dev/null 2>&1
	(cd "$work/base" && go build -o "$work/mlwarden-base" ./cmd/mlwarden)
fi

echo "generating $SMALL small files and $WEIGHTS x $WEIGHT_MB MB weights in $model" >&2
/usr/bin/python3 - "$model" "$SMALL" "$WEIGHT_MB" "$WEIGHTS" <<'PY'
import json, os, random, struct, sys
model, small, mb, weights = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(7)
os.makedirs(model)
words = ["layer", "attention", "hidden", "vocab", "rope", "theta", "norm", "eps", "dropout", "bias"]
for i in range(small):
    d = os.path.join(model, "d%02d" % (i % 50))
    os.makedirs(d, exist_ok=True)
    n = rnd.choice([200, 2000, 20000, 200000])
    body = " ".join(rnd.choice(words) + str(rnd.randint(0, 999)) for _ in range(n // 8))
    with open(os.path.join(d, "f%05d.json" % i), "w") as f:
        json.dump({"id": i, "text": body}, f)
chunk = os.urandom(1 << 20)
for i in range(weights):
    size = mb << 20
    hdr = json.dumps({"w": {"dtype": "U8", "shape": [size], "data_offsets": [0, size]}}).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(os.path.join(model, "model-%05d-of-%05d.safetensors" % (i + 1, weights)), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr)
        for _ in range(mb):
            f.write(chunk)
PY
(cd "$model" && find . -type f -printf '%P\n' | sort | xargs sha256sum > "$work/SHA256SUMS" && mv "$work/SHA256SUMS" SHA256SUMS)
for w in "$model"/*.safetensors; do (cd "$model" && sha256sum "$(basename "$w")" > "$(basename "$w").sha256"); done
total=$(du -sb "$model" | cut -f1)


# rchar of one scan: /proc/PID/io of the finished process before it is reaped.
rchar() {
	/usr/bin/python3 - "$1" "$model" <<'PY'
import os, subprocess, sys
p = subprocess.Popen([sys.argv[1], "scan", "--fail-on", "none", "--format", "json", sys.argv[2]], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
out = p.stdout.read()
os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
io = dict(l.split(": ") for l in open("/proc/%d/io" % p.pid).read().splitlines())
p.wait()
import json
n = sum(1 for f in json.loads(out)["findings"] if f["rule"].startswith("signatures/") and f["severity"] in ("critical", "high", "medium"))
print(int(io["rchar"]), n)
PY
}

cat "$model"/*.safetensors >/dev/null # warm the page cache
t_sum=$(cd "$model" && median sha256sum -c --quiet SHA256SUMS)
report() {
	local bin=$1 label=$2
	local t_all t_sig rc n
	t_all=$(median "$bin" scan --fail-on none "$model")
	t_sig=$(median "$bin" scan --fail-on none --checks signatures "$model")
	read -r rc n < <(rchar "$bin")
	awk -v l="$label" -v rc="$rc" -v tot="$total" -v ta="$t_all" -v tg="$t_sig" -v ts="$t_sum" -v n="$n" 'BEGIN {
		printf "%-9s bytes read %.0f MB of %.0f MB (%.3fx the directory) | all checks %.2f s | signatures only %.2f s | sha256sum -c %.2f s -> ratio %.2f (all) %.2f (signatures) | signature findings >= medium: %d\n",
			l, rc/1e6, tot/1e6, rc/tot, ta, tg, ts, ts/ta, ts/tg, n
	}'
}
echo "directory: $SMALL small files + $WEIGHTS x $WEIGHT_MB MB weights, $(awk -v t="$total" 'BEGIN{printf "%.0f", t/1e6}') MB, all in SHA256SUMS (+ a sidecar per weights file); medians of $RUNS"
[ -n "${BASE:-}" ] && report "$work/mlwarden-base" "base"
report "$work/mlwarden" "this"
