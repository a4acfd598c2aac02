#!/usr/bin/env bash
# Runs every go test -fuzz target of the module for a short, bounded time,
# one after another (issue 15: the fuzz campaign kept running). The seed
# corpora already run in go test; this mutates beyond them. A failure leaves
# the failing input in the package's testdata/fuzz/FuzzX/: commit it with
# the fix.
#
# The whole run is bounded by FUZZ_BUDGET seconds (default 360): targets not
# started by then are listed as skipped, and the order starts at a target
# that moves with the day of the year, so that successive CI runs cover
# every target.
#
#   .ci/fuzz.sh                 # FUZZTIME=5s per target (.ci/run: 3s)
#   FUZZTIME=60s FUZZ_BUDGET=0 .ci/fuzz.sh ./scanners/models/...   # no budget
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
budget="${FUZZ_BUDGET:-360}"
pkgs=("${@:-./...}")
fail=0
start=$(date +%s)
# go test -list names the real targets (a grep would also find fuzz
# functions inside test strings).
mapfile -t targets < <(go test -list '^Fuzz' "${pkgs[@]}" 2>/dev/null |
	awk '/^Fuzz/ {t[n++]=$1} /^(ok|\?)/ {for (i=0;i<n;i++) print $2, t[i]; n=0}')
n=${#targets[@]}
[ "$n" -gt 0 ] || { echo "no fuzz targets found"; exit 1; }
first=$(( $(date +%j | sed 's/^0*//') % n ))
ran=0
for ((k = 0; k < n; k++)); do
	read -r pkg target <<<"${targets[$(( (first + k) % n ))]}"
	if [ "$budget" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$budget" ]; then
		echo "skipped (budget of ${budget}s spent): $pkg $target"
		continue
	fi
	printf '%-52s %-24s ' "$pkg" "$target"
	t0=$(date +%s)
	fuzz() { go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1; }
	if out=$(fuzz); then
		echo "ok ($(( $(date +%s) - t0 ))s)"
	elif ! grep -q "Failing input written to" <<<"$out" && out=$(fuzz); then
		# The engine itself failed (a worker slow to stop on a loaded
		# machine), no input did: once more.
		echo "ok on a second try ($(( $(date +%s) - t0 ))s)"
	else
		echo "FAIL"
		echo "$out" | tail -n 40
		fail=1
	fi
	ran=$((ran + 1))
done
echo "fuzzed $ran of $n targets in $(( $(date +%s) - start ))s"
exit "$fail"
