#!/usr/bin/env bash
# Issue 21's image benchmark: `mlwarden scan` of an OCI image layout against
# plain serial `gunzip` of its layers. The layout is generated (bench/imagelayout:
# a 200 MiB ML tree layer, a third of it text with 64 fake credentials, and a
# 400 MiB weights layer; gzip; nothing downloaded). It prints, median of RUNS
# (whole process: wall, CPU user+sys, peak RSS) and the ratio of each wall
# time to serial GNU gunzip's:
#   gunzip        every layer blob through `gunzip -c > /dev/null`, one after the other
#   image path    scan --checks signatures (no check reads the files: fetch,
#                 verify, decompress, walk, hand over)
#   secrets       scan --checks secrets
#   all checks    scan (every check)
# BEFORE=path/to/old/mlwarden also times that binary, run by run in turn with
# the new one, and prints its rows (a before/after on the same noisy machine).
#
#   bench/image-layout.sh
#   RUNS=5 TREE=200 WEIGHTS=400 BEFORE=/tmp/mlwarden-old bench/image-layout.sh
# Needs: go, gzip, GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${RUNS:=3}" "${TREE:=200}" "${WEIGHTS:=400}" "${SEED:=1}"
WORK=${WORK:-$(mktemp -d -t mlwarden-bench-layout-XXXXXX)}
KEEP=${KEEP:-0}
[ "$KEEP" = 1 ] || trap 'rm -rf "$WORK"' EXIT
echo "work dir: $WORK; $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"

mkdir -p "$WORK/bin"
go build -o "$WORK/bin/mlwarden" ./cmd/mlwarden
go build -o "$WORK/bin/imagelayout" ./bench/imagelayout
layout="$WORK/layout-$TREE-$WEIGHTS-$SEED"
[ -f "$layout/index.json" ] || "$WORK/bin/imagelayout" -out "$layout" -tree "$TREE" -weights "$WEIGHTS" -seed "$SEED"
mapfile -t blobs < <("$WORK/bin/imagelayout" -blobs "$layout")
du -sh --apparent-size "$layout" | awk '{print "layout: " $1 " on disk"}'

# one LABEL CMD...: one run, appended to $WORK/times as "LABEL wall cpu rss".
one() {
	local label=$1
	shift
	/usr/bin/time -o "$WORK/t" -f "%e %U %S %M" "$@" >/dev/null 2>"$WORK/err" || {
		cat "$WORK/err" >&2
		exit 1
	}
	awk -v l="$label" '{printf "%s %s %.2f %d\n", l, $1, $2 + $3, $4}' "$WORK/t" >>"$WORK/times"
}

# scan LABEL BIN ARGS...: one run of BIN scan ARGS on the layout.
scan() {
	local label=$1 bin=$2
	shift 2
	one "$label" "$bin" scan --no-cache --format json --output /dev/null --fail-on none "$@" "oci:$layout"
}

: >"$WORK/times"
bins=("new:$WORK/bin/mlwarden")
[ -n "${BEFORE:-}" ] && bins=("before:$BEFORE" "${bins[@]}")
for _ in $(seq "$RUNS"); do
	# shellcheck disable=SC2016 # $b is the inner shell's
	one "gunzip" bash -c 'for b; do gunzip -c <"$b" >/dev/null; done' _ "${blobs[@]}"
	for nb in "${bins[@]}"; do
		n=${nb%%:*} b=${nb#*:}
		scan "$n|image-path" "$b" --checks signatures
		scan "$n|secrets" "$b" --checks secrets
		scan "$n|all-checks" "$b"
	done
done

python3 - "$WORK/times" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, wall, cpu, rss = line.split()
    rows.setdefault(label, []).append((float(wall), float(cpu), int(rss)))
med = lambda xs: statistics.median(xs)
gz = med([w for w, _, _ in rows["gunzip"]])
print("%-22s %9s %9s %9s %12s" % ("median of %d" % len(rows["gunzip"]), "wall s", "CPU s", "RSS MB", "/ gunzip"))
for label, rs in rows.items():
    w, c, m = med([r[0] for r in rs]), med([r[1] for r in rs]), med([r[2] for r in rs])
    print("%-22s %9.2f %9.2f %9.0f %11.2fx" % (label.replace("|", " "), w, c, m * 1024 / 1e6, w / gz))
PY
