#!/usr/bin/env bash
# Hashing throughput of `mlwarden verify checksums` against `sha256sum -c` on
# the same files (signatures issue): FILES files of SIZE_MB each, listed in a
# SHA256SUMS written by sha256sum; warm page cache, medians of RUNS. Prints
# both wall times, MB/s and the ratio (sha256sum time / mlwarden time: above
# 1 means mlwarden is faster).
#
#   bench/checksums.sh [FILES] [SIZE_MB]   # defaults 4 1024; RUNS=3
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
FILES=${1:-4}
SIZE_MB=${2:-1024}
RUNS=${RUNS:-3}
work=$(mktemp -d /tmp/mlwarden-checksums.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/mlwarden" ./cmd/mlwarden
mkdir "$work/d"
for i in $(seq "$FILES"); do
	head -c $((SIZE_MB << 20)) /dev/urandom > "$work/d/w$i.bin"
done
(cd "$work/d" && sha256sum w*.bin > SHA256SUMS)
cat "$work"/d/*.bin > /dev/null

t_sum=$(cd "$work/d" && STRICT=1 median sha256sum -c --quiet SHA256SUMS)
t_mlw=$(STRICT=1 median "$work/mlwarden" verify checksums "$work/d")
awk -v n="$FILES" -v mb="$SIZE_MB" -v ts="$t_sum" -v tm="$t_mlw" -v c="$(nproc)" 'BEGIN {
	printf "%d file(s) x %d MiB, %d cores, medians of runs\n", n, mb, c
	printf "sha256sum -c:              %.2f s (%.0f MB/s)\n", ts, n*mb*1.048576/ts
	printf "mlwarden verify checksums: %.2f s (%.0f MB/s)\n", tm, n*mb*1.048576/tm
	printf "ratio (sha256sum / mlwarden): %.2f\n", ts/tm
}'
