#!/bin/bash
# bench/peer-suites.sh: assemble the public test suites of picklescan, fickling,
# modelscan and ModelAudit (their checked-in files plus the files their tests
# generate), run mlwarden and each peer that runs here on the same files, and
# print, per suite, malicious blocked / benign blocked side by side.
#
#   bench/peer-suites.sh restore   # sources into $DIR/src (from $MIRROR, else git clone)
#   bench/peer-suites.sh generate  # run the suites' generators into $DIR/gen (Debian's Python)
#   bench/peer-suites.sh run       # label the files, run every scanner, print the tables
#   bench/peer-suites.sh all       # the three in order
#
# DIR (default /tmp/mlwarden-peer-suites) is outside the repository: the peers'
# files are never committed. MIRROR (default /work/.mirror) holds bare git
# directories named owner+name/repo; a suite's fixed commit (below) missing
# there is fetched from GitHub, that commit alone. MLWARDEN is the binary
# (default: go build into $DIR).
# Peers run from source with /usr/bin/python3 and PYTHONPATH set to their
# tree: picklescan and fickling need only the standard library and numpy;
# modelscan needs click, rich and tomlkit (Debian: python3-click python3-rich
# python3-tomlkit); the generators need torch, numpy, h5py, dill (python3-torch
# python3-numpy python3-h5py python3-dill) and pytest (python3-pytest) for the
# fixtures of modelscan's and fickling's tests. ModelAudit is not run (its
# dependency set is not packaged in Debian): only its suite is used.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
DIR=${DIR:-/tmp/mlwarden-peer-suites}
MIRROR=${MIRROR:-/work/.mirror}
PY=${PY:-/usr/bin/python3}
# The suites at the commits the table in docs/design/models.md was measured
# on (COMMIT_<name>=<sha> picks another).
declare -A commits=(
  [picklescan]=f15d54da3dec9aa28a87ede82f87882bb80f1023
  [fickling]=854c99acd2637f97162dd2e1aa2dab4e8d55d77d
  [modelscan]=8b8ed4bf78a863fcf3b664888dc7ff6ae22f5230
  [modelaudit]=5ddfcdc34310d45a209872c7300585a3aa481971
)
repos=(mmaitre314/picklescan trailofbits/fickling protectai/modelscan promptfoo/modelaudit)

restore() {
  mkdir -p "$DIR/src"
  for r in "${repos[@]}"; do
    name=${r#*/} gitdir=$MIRROR/${r/\//+}/repo
    want=COMMIT_$name
    commit=${!want:-${commits[$name]}}
    if ! git --git-dir="$gitdir" cat-file -e "$commit^{commit}" 2>/dev/null; then
      # Not in the mirror: fetch exactly that commit from GitHub.
      gitdir=$DIR/clone/$name.git
      if ! git --git-dir="$gitdir" cat-file -e "$commit^{commit}" 2>/dev/null; then
        git init --quiet --bare "$gitdir"
        git --git-dir="$gitdir" fetch --quiet --depth 1 "https://github.com/$r" "$commit"
      fi
    fi
    out=$DIR/src/$name
    rm -rf "$out"
    mkdir -p "$out"
    # Blob by blob: a partial mirror may lack large files (git archive stops at the first).
    missing=0
    while read -r mode type sha path; do
      [[ $type == blob ]] || continue
      mkdir -p "$out/$(dirname "$path")"
      if ! git --git-dir="$gitdir" cat-file blob "$sha" >"$out/$path" 2>/dev/null; then
        rm -f "$out/$path"
        echo "$path" >>"$out/.missing"
        missing=$((missing + 1))
      fi
      if [[ $mode == 100755 ]]; then chmod +x "$out/$path" 2>/dev/null || true; fi
    done < <(git --git-dir="$gitdir" ls-tree -r "$commit" | tr '\t' ' ')
    echo "$commit" >"$out/.commit"
    echo "restored $r@${commit:0:7} into $out ($missing blobs missing from the mirror)"
  done
}

generate() {
  rm -rf "$DIR/gen"
  mkdir -p "$DIR/gen"
  "$PY" "$here/peersuites/generate.py" "$DIR"
}

run() {
  bin=${MLWARDEN:-$DIR/mlwarden}
  if [[ -z ${MLWARDEN:-} ]]; then
    (cd "$root" && CGO_CFLAGS=${CGO_CFLAGS:-"-O2 -g -Wno-deprecated-declarations"} go build -o "$bin" ./cmd/mlwarden)
  fi
  MLWARDEN=$bin "$PY" "$here/peersuites/run.py" "$DIR" "$here/peersuites/labels.tsv"
}

case ${1:-all} in
restore) restore ;;
generate) generate ;;
run) run ;;
all) restore && generate && run ;;
*) echo "usage: $0 [restore|generate|run|all]" >&2 && exit 2 ;;
esac
