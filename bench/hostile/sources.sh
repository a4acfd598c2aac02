#!/usr/bin/env bash
# bench/hostile/sources.sh: issue 15's crafted inputs for the sources, the
# layer cache, the network and the sbatch checker, made here in a temporary
# directory and run through a built mlwarden. One markdown row per case:
# exit code, wall time, peak RSS, and what it said (or did).
#
#   bench/hostile/sources.sh                        # builds the working tree, asserts the outcomes
#   BIN=/tmp/mlw-before ASSERT=0 bench/hostile/sources.sh   # measure an older build
#
# LIMIT (120 s) is how long a case may run before it is killed (a hang);
# SPARSE_GIB (2) and BLOB_MIB (512) size the large-file cases; SBATCH_MIB (4)
# the directive-dense script. The registry cases use MLWARDEN_TEST_REGISTRY,
# or start one with .ci/registry.sh. The admission server's and the socket
# checker's cases are Go tests (go test ./server/... -run 'Abuse|Stalling|Load|Deadline|Dense|RequestBound').
# Needs git, /usr/bin/time, timeout, python3 (standard library).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
LIMIT=${LIMIT:-120}
ASSERT=${ASSERT:-1}
SPARSE_GIB=${SPARSE_GIB:-2}
BLOB_MIB=${BLOB_MIB:-512}
SBATCH_MIB=${SBATCH_MIB:-4}
TMP=$(mktemp -d /tmp/mlwarden-hostile-XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org \
	GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.org
export XDG_CACHE_HOME="$TMP/xdg-cache" # never the user's layer cache

if [ -z "${BIN:-}" ]; then
	BIN=$TMP/mlwarden
	CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -o "$BIN" ./cmd/mlwarden || exit 1
fi
failed=0

# tok SEED: a fake Hugging Face token, never a committed literal.
tok() { python3 -c "import random,string; r=random.Random($1); print('hf_'+''.join(r.choice(string.ascii_letters) for _ in range(34)))"; }

# run NAME WANT CHECK CMD...: runs CMD (killed after LIMIT), prints a row.
# WANT is the expected exit code; CHECK a shell test over $out/$err that
# must hold for the case to pass (e.g. '! -e marker').
run() {
	local name=$1 want=$2 check=$3
	shift 3
	out=$TMP/out.txt err=$TMP/err.txt
	/usr/bin/time -o "$TMP/time.txt" -f "%e %M" timeout -s KILL "$LIMIT" "$@" >"$out" 2>"$err"
	local code=$?
	read -r secs kb < <(tail -1 "$TMP/time.txt") 2>/dev/null || { secs=?; kb=0; }
	[[ $kb =~ ^[0-9]+$ ]] || kb=0
	[ "$code" = 137 ] && said="killed after ${LIMIT}s (hung)" || said=$(said_of)
	local ok=pass
	if [ "$code" != "$want" ] || ! eval "$check"; then ok=FAIL; fi
	printf '| %s | %s | %s s | %s MB | %s | %s |\n' "$name" "$code" "$secs" "$((kb / 1024))" "$said" "$ok"
	if [ "$ok" = FAIL ] && [ "$ASSERT" = 1 ]; then failed=1; fi
}

# said_of: a short account of what the run said.
said_of() {
	local s
	s=$(grep -hE 'mlwarden: [0-9]+ target|note: scanned with|ran |not scanned in full: [a-z]|mismatch|stalled|sent nothing|sent [0-9]+ bytes|could not check|deadline|timeout|dubious|owned by|error' "$out" "$err" "$TMP/marker" 2>/dev/null |
		grep -v '^\s*$' | head -3 | tr '\n' ' ' | tr '|' '/' | cut -c1-220)
	echo "${s:-(nothing)}"
}

echo "mlwarden: $BIN"
echo
echo '| case | exit | time | peak RSS | said | |'
echo '|---|---|---|---|---|---|'

# --- git: a repository's config must run nothing --------------------------
CANARY=$TMP/canary.sh
printf '#!/bin/sh\necho "ran $0 $*" >> %s/marker\nexit 0\n' "$TMP" >"$CANARY"
chmod +x "$CANARY"
base=$TMP/base
mkdir -p "$base" && git -C "$base" init -q -b main
echo "export HF_TOKEN=$(tok 1)" >"$base/train.sh"
echo "* merge=evil" >"$base/.gitattributes"
echo base >"$base/m.txt"
git -C "$base" add . && git -C "$base" commit -qm 1
echo "export HF_TOKEN=\${HF_TOKEN}" >"$base/train.sh"
echo "notes" >"$base/notes.txt"
git -C "$base" add . && git -C "$base" commit -qm 2
HISTBLOB=$(git -C "$base" rev-parse HEAD:notes.txt)
git -C "$base" rm -q notes.txt && git -C "$base" commit -qm 3
git -C "$base" checkout -qb side && echo side >"$base/m.txt" && git -C "$base" commit -qam s
git -C "$base" checkout -q main && echo main >"$base/m.txt" && git -C "$base" commit -qam m
git -C "$base" merge -q side -s ours --no-commit --no-ff 2>/dev/null
echo resolved >"$base/m.txt" && git -C "$base" add m.txt && git -C "$base" commit -q --no-edit

repo() { rm -rf "$TMP/r" "$TMP/marker"; cp -a "$base" "$TMP/r"; echo "$TMP/r"; }
gitcase() { # NAME CONFIG-TEXT [ENV=VALUE...]
	local name=$1 cfg=$2
	shift 2
	local r
	r=$(repo)
	printf '%b' "$cfg" >>"$r/.git/config"
	run "git: $name" 1 '[ ! -e $TMP/marker ]' env "$@" "$BIN" scan --checks secrets "git:$r"
}
gitcase "core.fsmonitor" "[core]\n\tfsmonitor = $CANARY\n"
gitcase "merge driver (remerge diff)" "[merge \"evil\"]\n\tdriver = $CANARY %O %A %B\n"
printf '[core]\n\tfsmonitor = %s\n' "$CANARY" >"$TMP/inc.config"
gitcase "include.path" "[include]\n\tpath = $TMP/inc.config\n"
gitcase "GIT_CONFIG_PARAMETERS" "" "GIT_CONFIG_PARAMETERS='core.fsmonitor=$CANARY' 'safe.directory=*'"
lazy() { # NAME URL EXTRA-CONFIG [ENV...]: a partial clone missing a blob only history needs
	local name=$1 url=$2 extra=$3
	shift 3
	local r
	r=$(repo)
	rm -f "$r/.git/objects/${HISTBLOB:0:2}/${HISTBLOB:2}"
	printf '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n[remote "origin"]\n\turl = %s\n\tpromisor = true\n%b' "$url" "$extra" >>"$r/.git/config"
	run "git: $name" 2 '[ ! -e $TMP/marker ]' env "$@" "$BIN" scan --checks secrets "git:$r"
}
lazy "core.sshCommand, ssh promisor" "ssh://git@127.0.0.1:1/r.git" "[core]\n\tsshCommand = $CANARY\n"
lazy "ext:: promisor, protocol.ext.allow" "ext::$CANARY" "[protocol \"ext\"]\n\tallow = always\n"
lazy "GIT_SSH_COMMAND, ssh promisor" "ssh://git@127.0.0.1:1/r.git" "" "GIT_SSH_COMMAND=$CANARY"

# --- git: nothing outside the repository ----------------------------------
OUT=$TMP/outside
mkdir -p "$OUT/conf"
OUTTOK=$(tok 99)
echo "HF_TOKEN=$OUTTOK" >"$OUT/conf/secret.env"
echo "HF_TOKEN=$OUTTOK" >"$OUT/secret.env"
r=$(repo)
mkdir -p "$r/conf" && echo nothing >"$r/conf/secret.env" && git -C "$r" add conf && git -C "$r" commit -qm conf
rm -rf "$r/conf" && ln -s "$OUT/conf" "$r/conf"
run "git: tracked dir replaced by a symlink out" 1 '! grep -q "conf/secret.env" $out' "$BIN" scan --checks secrets "git:$r"
r=$(repo)
printf '[core]\n\tworktree = %s\n' "$OUT" >>"$r/.git/config"
run "git: core.worktree out" 1 '! grep -q "secret.env" $out' "$BIN" scan --checks secrets "git:$r"

# --- git: large files are streamed -----------------------------------------
r=$TMP/big && mkdir -p "$r" && git -C "$r" init -q -b main
truncate -s "${BLOB_MIB}M" "$r/weights.bin" && echo x >"$r/README"
git -C "$r" add . && git -C "$r" commit -qm weights
truncate -s "${SPARSE_GIB}G" "$r/scratch.img"
run "git: ${SPARSE_GIB} GiB sparse untracked + ${BLOB_MIB} MiB file" 2 true "$BIN" scan --checks secrets "git:$r"
run "git: ${BLOB_MIB} MiB blob at HEAD (file:// clone)" 0 true "$BIN" scan --checks secrets "git:file://$r"

# --- the scanned directory's own config ------------------------------------
d=$TMP/checkout && mkdir -p "$d"
echo "export HF_TOKEN=$(tok 3)" >"$d/train.sh"
printf 'ignore:\n  - rule: "*"\n    reason: nothing to see\n' >"$d/.mlwarden.yaml"
run "dir: own .mlwarden.yaml ignores everything" 0 'grep -q "its own .mlwarden.yaml" $out' "$BIN" scan --checks secrets "$d"
run "dir: same, --no-target-config" 1 true "$BIN" scan --checks secrets --no-target-config "$d"

# --- sbatch: a directive-dense script within the hook's 5 s ----------------
python3 -c "
n=$SBATCH_MIB; out=['#!/bin/bash\n']; size=12; i=0
while size < n<<20:
    l='#SBATCH --comment=c%d\n' % i; out.append(l); size += len(l); i += 1
out.append('srun true\n'); open('$TMP/dense.sh', 'w').write(''.join(out))"
run "sbatch: ${SBATCH_MIB} MiB of #SBATCH lines, --timeout 5s" 0 true "$BIN" sbatch --timeout 5s "$TMP/dense.sh"

# --- registry: faults and the layer cache ----------------------------------
# (the network bound is 30 s: a stalled blob fails after 30 s of nothing)
if [ -z "${MLWARDEN_TEST_REGISTRY:-}" ]; then
	# shellcheck source=/dev/null
	source .ci/registry.sh >/dev/null 2>&1 || { echo "no registry: the registry cases are left out"; exit $failed; }
fi
REG=$MLWARDEN_TEST_REGISTRY
go build -o "$TMP/faultproxy" ./bench/hostile/faultproxy && go build -o "$TMP/poison" ./bench/hostile/poison || exit 1
mapfile -t refs < <("$TMP/poison" -registry "$REG")
REAL=${refs[0]} DECOY=${refs[1]} LAYERS=${refs[2]} BLOB2=${refs[3]}
proxy() { # FAULT PATH: starts a fault proxy, sets PROXY
	rm -f "$TMP/proxy.txt"
	"$TMP/faultproxy" -upstream "$REG" -fault "$1" -path "$2" >"$TMP/proxy.txt" 2>/dev/null &
	PIDS+=($!)
	for _ in $(seq 50); do [ -s "$TMP/proxy.txt" ] && break; sleep 0.1; done
	PROXY=$(head -1 "$TMP/proxy.txt")
}
img=${LAYERS#"$REG"}
for f in stall drip hang; do
	proxy "$f" "$BLOB2\$"
	run "registry: layer 2's blob: $f" 2 'grep -q "l0/.env" $out && grep -q "l2/.env" $out' "$BIN" scan --checks secrets --no-cache "registry:$PROXY$img"
	kill "${PIDS[-1]}"
done
proxy hang-token ""
run "registry: token endpoint hangs" 2 true "$BIN" scan --checks secrets --no-cache "registry:$PROXY$img"
kill "${PIDS[-1]}"
proxy drip "$BLOB2\$"
run "registry: drip, --timeout 10s" 2 'grep -q "l2/.env" $out' "$BIN" scan --checks secrets --no-cache --timeout 10s "registry:$PROXY$img"
kill "${PIDS[-1]}"
C=$TMP/cache
run "cache: scan the decoy (claims the real layer's diff ID)" 2 true env XDG_CACHE_HOME="$C" "$BIN" scan --checks secrets "registry:$DECOY"
run "cache: then scan the real image" 1 'grep -q "app/.env" $out' env XDG_CACHE_HOME="$C" "$BIN" scan --checks secrets "registry:$REAL"
exit $failed
