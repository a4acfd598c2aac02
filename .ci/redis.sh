#!/usr/bin/env bash
# Starts Debian's redis-server on 127.0.0.1 with a free port and no
# persistence, for the result cache's integration tests (scanners/cache,
# the image source, scan, sweep, serve replicas). Tests that kill a server
# or need TLS start their own (internal/redistest).
#
# Source it:
#     source .ci/redis.sh          # installs if needed, starts, waits until it answers
#     go test ./scanners/cache/    # tests read MLWARDEN_TEST_REDIS
#     mlwarden_redis_stop          # or let the EXIT trap do it
#
# Exports MLWARDEN_TEST_REDIS (127.0.0.1:PORT), MLWARDEN_TEST_REDIS_PID and
# MLWARDEN_TEST_REDIS_DIR. Idempotent: when MLWARDEN_TEST_REDIS answers, it
# does nothing.

mlwarden_redis_stop() {
	if [ -n "${MLWARDEN_TEST_REDIS_PID:-}" ]; then
		kill "$MLWARDEN_TEST_REDIS_PID" 2>/dev/null || true
		wait "$MLWARDEN_TEST_REDIS_PID" 2>/dev/null || true
	fi
	if [ -n "${MLWARDEN_TEST_REDIS_DIR:-}" ] && [ -d "$MLWARDEN_TEST_REDIS_DIR" ]; then
		rm -rf "$MLWARDEN_TEST_REDIS_DIR"
	fi
	unset MLWARDEN_TEST_REDIS MLWARDEN_TEST_REDIS_PID MLWARDEN_TEST_REDIS_DIR
}

mlwarden_redis_answers() {
	[ "$(redis-cli -h "${1%:*}" -p "${1##*:}" ping 2>/dev/null)" = "PONG" ]
}

mlwarden_redis_start() {
	if [ -n "${MLWARDEN_TEST_REDIS:-}" ] && mlwarden_redis_answers "$MLWARDEN_TEST_REDIS"; then
		return 0
	fi
	if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null &&
			apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends redis-server redis-tools >/dev/null ||
			{ echo "redis.sh: cannot install redis-server" >&2; return 1; }
	fi
	local dir port pid
	dir=$(mktemp -d /tmp/mlwarden-redis.XXXXXX) || return 1
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()') || return 1
	redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" \
		--maxmemory 256mb --maxmemory-policy allkeys-lru >"$dir/redis.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do
		if mlwarden_redis_answers "127.0.0.1:$port"; then
			export MLWARDEN_TEST_REDIS="127.0.0.1:$port" MLWARDEN_TEST_REDIS_PID="$pid" MLWARDEN_TEST_REDIS_DIR="$dir"
			echo "redis.sh: redis-server on $MLWARDEN_TEST_REDIS (pid $pid)" >&2
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "redis.sh: redis-server did not answer on 127.0.0.1:$port:" >&2
	cat "$dir/redis.log" >&2
	kill "$pid" 2>/dev/null || true
	rm -rf "$dir"
	return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -e
	mlwarden_redis_start
	echo "export MLWARDEN_TEST_REDIS=$MLWARDEN_TEST_REDIS MLWARDEN_TEST_REDIS_PID=$MLWARDEN_TEST_REDIS_PID MLWARDEN_TEST_REDIS_DIR=$MLWARDEN_TEST_REDIS_DIR"
else
	mlwarden_redis_start
fi
