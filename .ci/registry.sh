#!/usr/bin/env bash
# Starts Debian's docker-registry (the CNCF distribution registry) on
# 127.0.0.1 with a temporary storage directory and a free port, for the image
# source's integration tests.
#
# Source it (it exports variables and defines a stop function):
#     source .ci/registry.sh          # installs if needed, starts, waits until it answers
#     go test ./scanners/source/...   # tests read MLWARDEN_TEST_REGISTRY
#     mlwarden_registry_stop          # or let the EXIT trap do it
#
# Exports:
#   MLWARDEN_TEST_REGISTRY      127.0.0.1:PORT
#   MLWARDEN_TEST_REGISTRY_PID  the registry's process id
#   MLWARDEN_TEST_REGISTRY_DIR  its temporary storage and config directory
# Idempotent: when MLWARDEN_TEST_REGISTRY already answers, it does nothing.

mlwarden_registry_stop() {
	if [ -n "${MLWARDEN_TEST_REGISTRY_PID:-}" ]; then
		kill "$MLWARDEN_TEST_REGISTRY_PID" 2>/dev/null || true
		wait "$MLWARDEN_TEST_REGISTRY_PID" 2>/dev/null || true
	fi
	if [ -n "${MLWARDEN_TEST_REGISTRY_DIR:-}" ] && [ -d "$MLWARDEN_TEST_REGISTRY_DIR" ]; then
		rm -rf "$MLWARDEN_TEST_REGISTRY_DIR"
	fi
	unset MLWARDEN_TEST_REGISTRY MLWARDEN_TEST_REGISTRY_PID MLWARDEN_TEST_REGISTRY_DIR
}

mlwarden_registry_answers() {
	# The distribution API answers GET /v2/ with 200 and {}.
	curl -fsS --max-time 2 "http://$1/v2/" >/dev/null 2>&1
}

mlwarden_registry_start() {
	if [ -n "${MLWARDEN_TEST_REGISTRY:-}" ] && mlwarden_registry_answers "$MLWARDEN_TEST_REGISTRY"; then
		return 0
	fi
	if ! command -v docker-registry >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null &&
			apt-get -o DPkg::Lock::Timeout=600 install -y -qq docker-registry curl >/dev/null ||
			{ echo "registry.sh: cannot install docker-registry" >&2; return 1; }
	fi
	command -v curl >/dev/null 2>&1 || apt-get -o DPkg::Lock::Timeout=600 install -y -qq curl >/dev/null

	local dir port pid i
	dir=$(mktemp -d /tmp/mlwarden-registry.XXXXXX) || return 1
	# A free port: bind port 0 and read back what the kernel chose.
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()') || return 1
	cat >"$dir/config.yml" <<CFG
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: mlwarden-test-only
CFG
	docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
	pid=$!
	for i in $(seq 1 100); do
		if mlwarden_registry_answers "127.0.0.1:$port"; then
			export MLWARDEN_TEST_REGISTRY="127.0.0.1:$port"
			export MLWARDEN_TEST_REGISTRY_PID="$pid"
			export MLWARDEN_TEST_REGISTRY_DIR="$dir"
			echo "registry.sh: docker-registry on $MLWARDEN_TEST_REGISTRY (pid $pid)" >&2
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "registry.sh: docker-registry did not answer on 127.0.0.1:$port:" >&2
	cat "$dir/registry.log" >&2
	kill "$pid" 2>/dev/null || true
	rm -rf "$dir"
	return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	# Run directly: start, print the exports, and leave it running.
	set -e
	mlwarden_registry_start
	echo "export MLWARDEN_TEST_REGISTRY=$MLWARDEN_TEST_REGISTRY MLWARDEN_TEST_REGISTRY_PID=$MLWARDEN_TEST_REGISTRY_PID MLWARDEN_TEST_REGISTRY_DIR=$MLWARDEN_TEST_REGISTRY_DIR"
else
	mlwarden_registry_start && trap mlwarden_registry_stop EXIT
fi
