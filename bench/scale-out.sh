#!/usr/bin/env bash
# Measures the shared result cache and sweeps, on loopback (docs/design/scale-out.md):
#
#  (a) two "CI runners": runner 1 scans a generated image with
#      --cache-backend redis:// and an empty local cache directory (cold:
#      it fills Redis); runner 2, another process with another empty local
#      directory, scans the same image (its layers come from Redis). Median
#      wall time of each, bytes each process read (/proc/PID/io rchar:
#      registry, Redis and disk), and the ratio; Redis is flushed before each
#      cold run. A --no-cache scan is the baseline.
#  (b) a sweep of N small images: one process against M shard processes run
#      at once, with --no-cache so both do the same work; wall time, total CPU
#      (user+sys of every process), and whether the merged report is
#      byte-identical to the single process's.
#
#   bench/scale-out.sh                          # SIZE_MIB=256 LAYERS=8 IMAGES=50 SHARDS=4 RUNS=3
#   SIZE_MIB=1024 LAYERS=24 bench/scale-out.sh
#
# Starts its own Redis (.ci/redis.sh) and, when MLWARDEN_TEST_REGISTRY is
# unset, a registry (.ci/registry.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SIZE_MIB:=256}" "${LAYERS:=8}" "${IMAGES:=50}" "${SHARDS:=4}" "${RUNS:=3}"
export RUNS
. bench/lib.sh
if [ -z "${MLWARDEN_TEST_REGISTRY:-}" ]; then
	# shellcheck source=../.ci/registry.sh
	source .ci/registry.sh
fi
# A Redis of this script's own: it is flushed between runs.
unset MLWARDEN_TEST_REDIS
# shellcheck source=../.ci/redis.sh
source .ci/redis.sh
work=$(mktemp -d)
trap 'mlwarden_redis_stop; declare -F mlwarden_registry_stop >/dev/null && mlwarden_registry_stop; rm -rf "$work"' EXIT
redis="redis://$MLWARDEN_TEST_REDIS"
reg=$MLWARDEN_TEST_REGISTRY
bin=$work/mlwarden
go build -o "$bin" ./cmd/mlwarden
go build -o "$work/imagegen" ./bench/imagegen
ref="$reg/bench/scale:${SIZE_MIB}m"
"$work/imagegen" -push "$ref" -size "$SIZE_MIB" -layers "$LAYERS" -work "$work/gen" >/dev/null 2>&1
flush() { redis-cli -h "${MLWARDEN_TEST_REDIS%:*}" -p "${MLWARDEN_TEST_REDIS##*:}" flushall >/dev/null; }
runner() { # a CI runner: a fresh local cache directory each time
	local d
	d=$(mktemp -d "$work/runner.XXXX")
	env XDG_CACHE_HOME="$d" "$bin" scan --quiet --format json --output /dev/null --fail-on none "$@" || true
	rm -rf "$d"
}
cold() { flush; runner --cache-backend "$redis" "registry:$ref"; }
warm() { runner --cache-backend "$redis" "registry:$ref"; }

echo "== (a) a second CI runner, layers cached in Redis by the first ($(uptime | sed 's/.*load/load/'), $(nproc) CPUs)"
echo "image: $ref, $SIZE_MIB MiB in $LAYERS layers, every check"
t_none=$(median runner --no-cache "registry:$ref")
t_cold=$(median cold)
cold >/dev/null # leaves Redis filled for the warm runs
t_warm=$(median warm)
read -r b_cold _ < <(flush; procstats env XDG_CACHE_HOME="$work/p1" "$bin" scan --quiet --format json --output /dev/null --fail-on none --cache-backend "$redis" "registry:$ref")
read -r b_warm _ < <(procstats env XDG_CACHE_HOME="$work/p2" "$bin" scan --quiet --format json --output /dev/null --fail-on none --cache-backend "$redis" "registry:$ref")
keys=$(redis-cli -h "${MLWARDEN_TEST_REDIS%:*}" -p "${MLWARDEN_TEST_REDIS##*:}" dbsize)
mem=$(redis-cli -h "${MLWARDEN_TEST_REDIS%:*}" -p "${MLWARDEN_TEST_REDIS##*:}" info memory | awk -F: '/^used_memory_human/ {print $2}' | tr -d '\r')
printf '%-44s %8.2f s\n' "--no-cache (baseline)" "$t_none" "runner 1, cold (fills Redis)" "$t_cold" "runner 2, fresh local dir (Redis warm)" "$t_warm"
awk -v c="$t_cold" -v w="$t_warm" 'BEGIN {printf "%-44s %8.1fx\n", "cold / warm", c / w}'
printf '%-44s %10.0f KiB\n' "bytes read, runner 1 (cold)" "$(awk -v b="$b_cold" 'BEGIN {print b/1024}')"
printf '%-44s %10.0f KiB\n' "bytes read, runner 2 (warm)" "$(awk -v b="$b_warm" 'BEGIN {print b/1024}')"
echo "Redis after the warm runs: $keys keys, $mem"

echo
echo "== (b) a sweep of $IMAGES images: one process against $SHARDS shards at once (--no-cache)"
for i in $(seq -w 1 "$IMAGES"); do
	"$work/imagegen" -push "$reg/bench/sweep-$i:1" -size 4 -layers 2 -seed "$((10#$i))" -work "$work/gen-s" >/dev/null 2>&1
done
pattern="registry:$reg/bench/sweep-*:1"
cpu() { # prints wall, and user+sys of the processes it ran
	/usr/bin/python3 - "$@" <<'PY'
import os, subprocess, sys, time
t = time.time()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = os.times()
print("%.2f %.2f" % (time.time() - t, r.children_user + r.children_system))
PY
}
single() { "$bin" sweep --quiet --no-cache --format json -o "$work/single.json" --fail-on none "$pattern"; }
sharded() {
	rm -rf "$work/reports"
	for s in $(seq 0 $((SHARDS - 1))); do
		"$bin" sweep --quiet --no-cache --shard "$s/$SHARDS" --report-dir "$work/reports" --format json -o /dev/null --fail-on none "$pattern" &
	done
	wait
	"$bin" sweep merge --format json -o "$work/merged.json" --fail-on none "$work"/reports/shard-*.json
}
export -f single sharded
export bin work pattern SHARDS
ws=(); cs=(); wm=(); cm=()
for _ in $(seq "$RUNS"); do
	read -r w c < <(cpu bash -c single); ws+=("$w"); cs+=("$c")
	read -r w c < <(cpu bash -c sharded); wm+=("$w"); cm+=("$c")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-44s wall %7s s, CPU %7s s\n' "one process" "$(med "${ws[@]}")" "$(med "${cs[@]}")" "$SHARDS shards at once + merge" "$(med "${wm[@]}")" "$(med "${cm[@]}")"
awk -v a="$(med "${ws[@]}")" -v b="$(med "${wm[@]}")" -v c="$(med "${cs[@]}")" -v d="$(med "${cm[@]}")" \
	'BEGIN {printf "%-44s wall %6.2fx, CPU %6.2fx\n", "one process / shards", a / b, c / d}'
n=$(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(len(r["targets"]), len(r["findings"]))' "$work/single.json")
if cmp -s "$work/single.json" "$work/merged.json"; then
	echo "merged report: byte-identical to the single process's (targets, findings: $n)"
else
	echo "merged report DIFFERS from the single process's"; diff <(head -c 2000 "$work/single.json") <(head -c 2000 "$work/merged.json") | head; exit 1
fi
