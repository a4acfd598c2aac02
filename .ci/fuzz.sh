#!/usr/bin/env bash
# Runs every go test -fuzz target of the module for a short, bounded time,
# one after another (issue 15: the fuzz campaign kept running). The seed
# corpora already run in go test; this mutates beyond them. A failure leaves
# the failing input in the package's testdata/fuzz/FuzzX/: commit it with
# the fix.
#
#   .ci/fuzz.sh                 # FUZZTIME=5s per target (.ci/run: 3s)
#   FUZZTIME=60s .ci/fuzz.sh ./scanners/models/...
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
pkgs=("${@:-./...}")
fail=0
start=$(date +%s)
# go test -list names the real targets (a grep would also find fuzz
# functions inside test strings).
while read -r pkg target; do
	printf '%-45s %-28s ' "$pkg" "$target"
	t0=$(date +%s)
	if out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
		echo "ok ($(( $(date +%s) - t0 ))s)"
	else
		echo "FAIL"
		echo "$out" | tail -n 40
		fail=1
	fi
done < <(go test -list '^Fuzz' "${pkgs[@]}" 2>/dev/null | awk '/^Fuzz/ {t[n++]=$1} /^(ok|\?)/ {for (i=0;i<n;i++) print $2, t[i]; n=0}')
echo "fuzzing took $(( $(date +%s) - start ))s"
exit "$fail"
