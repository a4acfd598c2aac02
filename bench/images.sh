#!/usr/bin/env bash
# Measures the image source on a ~1 GiB generated image in a loopback
# registry: cold scan (wall time, peak RSS), warm-cache rescan, and plain
# decompression of the same layers as the throughput baseline.
#
#   bench/images.sh            # starts a registry with .ci/registry.sh if needed
#   SIZE_MIB=1024 LAYERS=24 bench/images.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SIZE_MIB:=1024}" "${LAYERS:=24}"
if [ -z "${MLWARDEN_TEST_REGISTRY:-}" ]; then
	# shellcheck source=../.ci/registry.sh
	source .ci/registry.sh
fi
ref="$MLWARDEN_TEST_REGISTRY/bench/ml:${SIZE_MIB}m"
bin=$(mktemp -d)/mlwarden
cache=$(mktemp -d)
go build -o "$bin" ./cmd/mlwarden
go run ./bench/imagegen -push "$ref" -size "$SIZE_MIB" -layers "$LAYERS"

run() { # label, args...
	local label=$1
	shift
	/usr/bin/time -f "$label: wall %e s, peak RSS %M KiB, user %U s, sys %S s" \
		env XDG_CACHE_HOME="$cache" "$bin" scan --format json --output /dev/null --fail-on none "$@" || true
}
run "cold scan (no cache)" --no-cache "registry:$ref"
run "cold scan (filling the cache)" "registry:$ref"
run "warm rescan" "registry:$ref"
run "cold scan, secrets only" --no-cache --checks secrets "registry:$ref"
go run ./bench/imagegen -decompress "$ref"
rm -rf "$cache" "$(dirname "$bin")"
