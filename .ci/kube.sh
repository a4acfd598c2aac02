#!/usr/bin/env bash
# Starts a real Kubernetes API server on 127.0.0.1 for the k8s: target's
# integration tests: Debian's etcd-server and a kube-apiserver built from the
# Go module proxy (the module in .ci/kube: k8s.io/kubernetes with its staging
# modules replaced by version). No downloaded binaries. There is no
# controller-manager or scheduler: Deployments make no Pods, and a namespace
# gets no `default` ServiceAccount unless a test creates one.
#
# The built binary is cached, keyed by the hash of .ci/kube's go.mod, go.sum,
# main.go and the Go version, under $MLWARDEN_KUBE_CACHE (default: the
# directory above $(go env GOCACHE), i.e. ~/.cache/mlwarden), so that CI
# builds it once (about 5 minutes cold on 2 cores) and reuses it after.
#
# Source it (it exports variables and defines a stop function):
#     source .ci/kube.sh             # installs etcd if needed, builds, starts, waits for /readyz
#     go test ./scanners/source/k8s/...
#     mlwarden_kube_stop             # or let the EXIT trap do it
# Or run it: `.ci/kube.sh build` only builds (and prints the binary's path).
#
# Exports:
#   MLWARDEN_TEST_KUBECONFIG         kubeconfig of user admin (token, group system:masters)
#   MLWARDEN_TEST_KUBECONFIG_READER  kubeconfig of user mlwarden-reader (token, no
#                                    group: it may do only what a test binds it to)
#   MLWARDEN_TEST_KUBE_DIR           temporary directory (etcd data, keys, logs)
#   MLWARDEN_TEST_KUBE_PIDS          "ETCD_PID APISERVER_PID"
# Idempotent: when MLWARDEN_TEST_KUBECONFIG already answers, it does nothing.

mlwarden_kube_root() {
	cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd
}

mlwarden_kube_stop() {
	local p
	for p in ${MLWARDEN_TEST_KUBE_PIDS:-}; do
		kill "$p" 2>/dev/null || true
	done
	for p in ${MLWARDEN_TEST_KUBE_PIDS:-}; do
		wait "$p" 2>/dev/null || true
	done
	if [ -n "${MLWARDEN_TEST_KUBE_DIR:-}" ] && [ -d "$MLWARDEN_TEST_KUBE_DIR" ]; then
		rm -rf "$MLWARDEN_TEST_KUBE_DIR"
	fi
	unset MLWARDEN_TEST_KUBECONFIG MLWARDEN_TEST_KUBECONFIG_READER MLWARDEN_TEST_KUBE_DIR MLWARDEN_TEST_KUBE_PIDS
}

# mlwarden_kube_build prints the path of a kube-apiserver built from .ci/kube,
# building it only when the cache has none for this go.sum.
mlwarden_kube_build() {
	local root mod key cache bin start
	root=$(mlwarden_kube_root) || return 1
	mod="$root/.ci/kube"
	key=$({ cat "$mod/go.mod" "$mod/go.sum" "$mod/main.go"; go version; } | sha256sum | cut -c1-16)
	cache="${MLWARDEN_KUBE_CACHE:-$(dirname "$(go env GOCACHE)")/mlwarden}"
	bin="$cache/kube-apiserver-$key"
	if [ -x "$bin" ]; then
		echo "$bin"
		return 0
	fi
	mkdir -p "$cache" || return 1
	echo "kube.sh: building kube-apiserver into $bin (cold: about 5 minutes)" >&2
	start=$(date +%s)
	# GOWORK=off and GOFLAGS= : the module builds on its own, whatever the
	# caller's environment says.
	(cd "$mod" && GOWORK=off GOFLAGS='' go build -trimpath \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.34.4 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34" \
		-o "$bin.tmp.$$" .) || { rm -f "$bin.tmp.$$"; echo "kube.sh: build failed" >&2; return 1; }
	mv "$bin.tmp.$$" "$bin"
	echo "kube.sh: built kube-apiserver in $(($(date +%s) - start)) s" >&2
	echo "$bin"
}

mlwarden_kube_freeport() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

mlwarden_kube_readyz() { # URL TOKEN CA
	curl -fsS --max-time 2 --cacert "$3" -H "Authorization: Bearer $2" "$1/readyz" >/dev/null 2>&1
}

mlwarden_kube_kubeconfig() { # FILE SERVER CA USER TOKEN
	cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: mlwarden-test
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 <"$3")
users:
- name: $4
  user:
    token: $5
contexts:
- name: mlwarden-test
  context:
    cluster: mlwarden-test
    user: $4
current-context: mlwarden-test
KC
}

mlwarden_kube_start() {
	if [ -n "${MLWARDEN_TEST_KUBECONFIG:-}" ] && [ -f "$MLWARDEN_TEST_KUBECONFIG" ] &&
		[ -n "${MLWARDEN_TEST_KUBE_DIR:-}" ] && [ -d "$MLWARDEN_TEST_KUBE_DIR" ]; then
		return 0
	fi
	if ! command -v etcd >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null &&
			apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends etcd-server openssl curl >/dev/null ||
			{ echo "kube.sh: cannot install etcd-server" >&2; return 1; }
	fi
	local bin dir etcdport peerport port etcdpid apipid admin reader ca url i
	bin=$(mlwarden_kube_build) || return 1
	dir=$(mktemp -d /tmp/mlwarden-kube.XXXXXX) || return 1
	etcdport=$(mlwarden_kube_freeport) && peerport=$(mlwarden_kube_freeport) && port=$(mlwarden_kube_freeport) || return 1

	etcd --name mlwarden-test --data-dir "$dir/etcd" \
		--listen-client-urls "http://127.0.0.1:$etcdport" --advertise-client-urls "http://127.0.0.1:$etcdport" \
		--listen-peer-urls "http://127.0.0.1:$peerport" --initial-advertise-peer-urls "http://127.0.0.1:$peerport" \
		--initial-cluster "mlwarden-test=http://127.0.0.1:$peerport" \
		>"$dir/etcd.log" 2>&1 &
	etcdpid=$!

	openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null || { kill "$etcdpid"; rm -rf "$dir"; return 1; }
	admin=$(openssl rand -hex 24) && reader=$(openssl rand -hex 24)
	{
		echo "$admin,admin,admin,system:masters"
		echo "$reader,mlwarden-reader,mlwarden-reader"
	} >"$dir/tokens.csv"
	chmod 600 "$dir/tokens.csv" "$dir/sa.key"

	"$bin" --etcd-servers "http://127.0.0.1:$etcdport" \
		--bind-address 127.0.0.1 --secure-port "$port" --cert-dir "$dir/certs" \
		--token-auth-file "$dir/tokens.csv" --authorization-mode RBAC \
		--service-account-key-file "$dir/sa.key" --service-account-signing-key-file "$dir/sa.key" \
		--service-account-issuer https://kubernetes.default.svc \
		--service-cluster-ip-range 10.0.0.0/24 \
		--feature-gates ImageVolume=true --allow-privileged=true \
		--enable-priority-and-fairness=false \
		>"$dir/apiserver.log" 2>&1 &
	apipid=$!
	export MLWARDEN_TEST_KUBE_PIDS="$etcdpid $apipid" MLWARDEN_TEST_KUBE_DIR="$dir"

	url="https://127.0.0.1:$port"
	ca="$dir/certs/apiserver.crt"
	for i in $(seq 1 300); do
		if [ -f "$ca" ] && mlwarden_kube_readyz "$url" "$admin" "$ca"; then
			mlwarden_kube_kubeconfig "$dir/admin.kubeconfig" "$url" "$ca" admin "$admin"
			mlwarden_kube_kubeconfig "$dir/reader.kubeconfig" "$url" "$ca" mlwarden-reader "$reader"
			export MLWARDEN_TEST_KUBECONFIG="$dir/admin.kubeconfig"
			export MLWARDEN_TEST_KUBECONFIG_READER="$dir/reader.kubeconfig"
			echo "kube.sh: kube-apiserver on $url after ${i}x0.5 s (pids $MLWARDEN_TEST_KUBE_PIDS)" >&2
			return 0
		fi
		if ! kill -0 "$apipid" 2>/dev/null || ! kill -0 "$etcdpid" 2>/dev/null; then
			break
		fi
		sleep 0.5
	done
	echo "kube.sh: kube-apiserver did not become ready on $url:" >&2
	tail -n 30 "$dir/etcd.log" "$dir/apiserver.log" >&2
	mlwarden_kube_stop
	return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -e
	if [ "${1:-}" = build ]; then
		mlwarden_kube_build
		exit 0
	fi
	# Run directly: start, print the exports, and leave it running.
	mlwarden_kube_start
	echo "export MLWARDEN_TEST_KUBECONFIG=$MLWARDEN_TEST_KUBECONFIG MLWARDEN_TEST_KUBECONFIG_READER=$MLWARDEN_TEST_KUBECONFIG_READER MLWARDEN_TEST_KUBE_DIR=$MLWARDEN_TEST_KUBE_DIR MLWARDEN_TEST_KUBE_PIDS=\"$MLWARDEN_TEST_KUBE_PIDS\""
else
	mlwarden_kube_start && trap mlwarden_kube_stop EXIT
fi
