#!/usr/bin/env bash
# Measures scanning models where they live (docs/design/model-sources.md):
# a Hub repository of a 4 GiB safetensors file, a 1 GiB PyTorch checkpoint
# and the usual small files (generated sparse, served on loopback by
# internal/hubtest), and the same files as a CNCF ModelPack artifact in a
# loopback registry. Prints bytes downloaded and wall time (median of RUNS)
# against the repository's size and against a full download of it.
#
#   bench/model-sources.sh              # starts a registry with .ci/registry.sh if needed
#   RUNS=5 ST_GIB=4 CK_GIB=1 bench/model-sources.sh
#   NO_REGISTRY=1 bench/model-sources.sh  # the Hub only
set -euo pipefail
cd "$(dirname "$0")/.."
: "${RUNS:=3}" "${ST_GIB:=4}" "${CK_GIB:=1}"
if [ -z "${NO_REGISTRY:-}" ] && [ -z "${MLWARDEN_TEST_REGISTRY:-}" ]; then
	# shellcheck source=../.ci/registry.sh
	source .ci/registry.sh
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/mlwarden" ./cmd/mlwarden
reg=()
if [ -z "${NO_REGISTRY:-}" ]; then
	reg=(-registry "$MLWARDEN_TEST_REGISTRY")
fi
go run ./bench/modelsrc -mlwarden "$work/mlwarden" -dir "$work" -runs "$RUNS" \
	-safetensors-gib "$ST_GIB" -checkpoint-gib "$CK_GIB" "${reg[@]}"
