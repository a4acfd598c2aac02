#!/bin/bash
# bench/pins-corpus.sh: precision and recall of the pins check (and of the
# misconfig check's exposed servers) against OpenSSF Scorecard's
# Pinned-Dependencies logic, on one corpus:
#
#   scorecard/  Scorecard's own test data (checks/raw/testdata, Apache-2.0)
#   zizmor/     zizmor's unpinned-uses and unpinned-images test workflows and
#               actions (MIT)
#   hadolint/   one Dockerfile per case of hadolint's DL3006/DL3007 (image
#               tags) and DL3008/DL3013/DL3016/DL3018/DL3028/DL3033/DL3037/
#               DL3041 (package versions) specs, with hadolint's verdict
#               (GPL-3.0: extracted at run time, never copied here)
#   mlwarden/   fixtures/pins: Slurm jobs, node setup scripts, CI workflows,
#               actions and a Dockerfile written for this corpus
#
# The peers' files are restored from the mirrors under $MIRROR at fixed
# commits into a temporary directory; nothing of theirs is committed. The
# expected findings are bench/pins-corpus.expect (the union of what both
# tools report, adjudicated line by line, plus what both missed) and, for the
# hadolint cases, hadolint's own assertions with the overrides listed there.
#
# Scorecard's verdicts come from its own code: checks/raw.PinningDependencies
# built from the mirror at the fixed commit with a small main over its
# localdir client (needs the Go module proxy once; SCORECARD=/path/to/binary
# reuses a build). Without it, only mlwarden's columns are printed.
#
# Usage: bench/pins-corpus.sh [KEEP_DIR]   (KEEP_DIR keeps corpus and outputs)
#        BASE=<git ref> adds a column for mlwarden built at that commit;
#        MLWARDEN=/path/to/mlwarden skips building this tree.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
MIRROR=${MIRROR:-/work/.mirror}
SCORECARD_COMMIT=40c1e35996730d4fdcbdb2e6a23917a2467e29b7
ZIZMOR_COMMIT=11bbf7e6cffac7ccf4f803d40255e0cd54c60236
HADOLINT_COMMIT=8f936c5e975d3663b3cce4ac5b3baa3db26b8516
PY=${PY:-/usr/bin/python3}

if [ $# -gt 0 ]; then
	work=$1
	mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
corpus=$work/corpus
rm -rf "$corpus"
mkdir -p "$corpus"

repo() { echo "$MIRROR/$1/repo"; }
for r in ossf+scorecard zizmorcore+zizmor hadolint+hadolint; do
	[ -d "$(repo $r)" ] || { echo "missing mirror $(repo $r) (fetch github:${r/+//} first)" >&2; exit 2; }
done

# Scorecard's test data, as its tests read it (workflows under .github/).
# (git archive warns about the mirror's absent large files, which are not
# among the paths taken; its messages go to a log.)
git -C "$(repo ossf+scorecard)" archive "$SCORECARD_COMMIT" checks/raw/testdata 2>>"$work/git-archive.log" | tar -x -C "$work"
mv "$work/checks/raw/testdata" "$corpus/scorecard"
rm -rf "$work/checks"

# zizmor's pinning test data, workflows under .github/workflows/.
zz=crates/zizmor/tests/integration/test-data
mkdir -p "$corpus/zizmor/.github/workflows" "$corpus/zizmor/actions/docker-action" "$corpus/zizmor/actions/composite"
for f in unpinned-images.yml unpinned-images/issue-1942-repro.yml unpinned-images/issue-2097-repro.yml \
	unpinned-images/matrix-in-image.yml unpinned-images/urllib3-empty-matrix-container.yml unpinned-uses.yml; do
	git -C "$(repo zizmorcore+zizmor)" show "$ZIZMOR_COMMIT:$zz/$f" >"$corpus/zizmor/.github/workflows/$(basename "$f")"
done
git -C "$(repo zizmorcore+zizmor)" show "$ZIZMOR_COMMIT:$zz/unpinned-images/docker-action/action.yml" >"$corpus/zizmor/actions/docker-action/action.yml"
git -C "$(repo zizmorcore+zizmor)" show "$ZIZMOR_COMMIT:$zz/unpinned-uses/action.yml" >"$corpus/zizmor/actions/composite/action.yml"

# hadolint's rule specs, one Dockerfile per case.
mkdir -p "$work/hadolint-specs"
for r in DL3006 DL3007 DL3008 DL3013 DL3016 DL3018 DL3028 DL3033 DL3037 DL3041; do
	git -C "$(repo hadolint+hadolint)" show "$HADOLINT_COMMIT:test/Hadolint/Rule/${r}Spec.hs" >"$work/hadolint-specs/$r.hs"
done
"$PY" "$here/pins-hadolint-cases.py" "$corpus/hadolint" "$work"/hadolint-specs/*.hs >"$work/hadolint-labels.tsv"

# Ours.
cp -r "$root/fixtures/pins" "$corpus/mlwarden"

echo "corpus: $(find "$corpus" -type f | wc -l) files ($(wc -l <"$work/hadolint-labels.tsv") hadolint cases)" >&2

# mlwarden (MLWARDEN=/path/to/binary reuses a build).
mlwarden=${MLWARDEN:-$work/mlwarden}
[ -n "${MLWARDEN:-}" ] || (cd "$root" && go build -o "$mlwarden" ./cmd/mlwarden)
for g in scorecard zizmor hadolint mlwarden; do
	# exit 1 means findings
	"$mlwarden" scan --checks pins,misconfig --format json --no-target-config "$corpus/$g" >"$work/mlwarden-$g.json" || [ $? -eq 1 ]
done

# BASE=<git ref>: the same for mlwarden at that commit (a before/after).
if [ -n "${BASE:-}" ]; then
	rm -rf "$work/base-src"
	mkdir -p "$work/base-src"
	git -C "$root" archive "$BASE" | tar -x -C "$work/base-src"
	(cd "$work/base-src" && go build -o "$work/mlwarden-base" ./cmd/mlwarden)
	for g in scorecard zizmor hadolint mlwarden; do
		"$work/mlwarden-base" scan --checks pins,misconfig --format json --no-target-config "$corpus/$g" >"$work/before-$g.json" || [ $? -eq 1 ]
	done
fi

# Scorecard's raw Pinned-Dependencies check.
scorecard=${SCORECARD:-}
if [ -z "$scorecard" ]; then
	src=$work/scorecard-src
	rm -rf "$src"
	mkdir -p "$src"
	# Everything but the large data files the mirror does not hold.
	dirs=$(git -C "$(repo ossf+scorecard)" ls-tree --name-only "$SCORECARD_COMMIT" | grep -v -e '^cron$' -e '^docs$')
	# shellcheck disable=SC2086
	git -C "$(repo ossf+scorecard)" archive "$SCORECARD_COMMIT" $dirs 2>>"$work/git-archive.log" | tar -x -C "$src"
	mkdir -p "$src/cmd/pinraw"
	cat >"$src/cmd/pinraw/main.go" <<'GO'
// pinraw runs Scorecard's Pinned-Dependencies raw check on a local
// directory and prints one line per dependency it found:
// path, line, type, pinned, name (tab-separated).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ossf/scorecard/v5/checker"
	"github.com/ossf/scorecard/v5/checks/raw"
	"github.com/ossf/scorecard/v5/clients"
	"github.com/ossf/scorecard/v5/clients/localdir"
	"github.com/ossf/scorecard/v5/log"
)

func main() {
	ctx := context.Background()
	repo, err := localdir.MakeLocalDirRepo(os.Args[1])
	if err != nil {
		panic(err)
	}
	c := localdir.CreateLocalDirClient(ctx, log.NewLogger(log.WarnLevel))
	if err := c.InitRepo(repo, clients.HeadSHA, 0); err != nil {
		panic(err)
	}
	req := &checker.CheckRequest{Ctx: ctx, RepoClient: c, Repo: repo, Dlogger: checker.NewLogger()}
	data, err := raw.PinningDependencies(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	for _, d := range data.Dependencies {
		if d.Location == nil {
			continue
		}
		p := "?"
		if d.Pinned != nil {
			p = fmt.Sprint(*d.Pinned)
		}
		n := ""
		if d.Name != nil {
			n = *d.Name
		}
		fmt.Printf("%s\t%d\t%s\t%s\t%s\n", d.Location.Path, d.Location.Offset, d.Type, p, n)
	}
}
GO
	if (cd "$src" && go build -o "$work/scorecard-pinraw" ./cmd/pinraw) >"$work/scorecard-build.log" 2>&1; then
		scorecard=$work/scorecard-pinraw
	else
		echo "Scorecard could not be built (see $work/scorecard-build.log); printing mlwarden only" >&2
	fi
fi
if [ -n "$scorecard" ]; then
	# Scorecard's raw check stops at the first file its parsers refuse, and
	# its own tests call it one file at a time: so does this, each file alone
	# in a directory at its path.
	one=$work/scorecard-one
	for g in scorecard zizmor hadolint mlwarden; do
		: >"$work/scorecard-$g.tsv"
		(cd "$corpus/$g" && find . -type f | sed 's|^\./||' | sort) | while read -r rel; do
			rm -rf "$one"
			# Scorecard reads workflows only at the root's .github/workflows/.
			at=$rel
			case $rel in */.github/workflows/*) at=.github/workflows/${rel##*/.github/workflows/} ;; esac
			mkdir -p "$one/$(dirname "$at")"
			cp "$corpus/$g/$rel" "$one/$at"
			{ "$scorecard" "$one" 2>>"$work/scorecard-errors.log" || echo "$g/$rel" >>"$work/scorecard-refused.txt"; } |
				awk -F'\t' -v at="$at" -v rel="$rel" 'BEGIN { OFS = FS } $1 == at { $1 = rel } { print }' >>"$work/scorecard-$g.tsv"
		done
	done
fi

"$PY" "$here/pins-corpus-eval.py" "$work" "$here/pins-corpus.expect"
