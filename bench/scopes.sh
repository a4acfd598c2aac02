#!/usr/bin/env bash
# Change-scoped scans (issue 35): builds a repository of COMMITS commits
# (default 3000; code, configs and requirements edited a few lines at a
# time, a fake token from a seed in every 200th commit; nothing is
# committed to this repository), then prints the median of RUNS (default 5)
# wall times and the ratios of:
#   mlwarden scan git:REPO --since-commit HEAD~10   (the last ten commits)
#   mlwarden scan git:REPO                          (tree and whole history)
#   gitleaks git --log-opts HEAD~10..HEAD REPO      (the same range)
# gitleaks: go install github.com/zricethezav/gitleaks/v8@v8.30.1 (GITLEAKS
# names another binary).
#
# Usage: bench/scopes.sh            COMMITS=500 RUNS=3 bench/scopes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
COMMITS=${COMMITS:-3000}
RUNS=${RUNS:-5}
export RUNS
GITLEAKS=${GITLEAKS:-$(command -v gitleaks || echo "$(go env GOPATH)/bin/gitleaks")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/mlwarden" ./cmd/mlwarden
repo=$work/repo
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.org GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.org
git init -q -b main "$repo"
# One fast-import stream: COMMITS commits over 50 files.
python3 - "$COMMITS" > "$work/stream" <<'PY'
import random, sys
n = int(sys.argv[1])
r = random.Random(35)
files = {f"src/mod{i}.py": [f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(20)] for i in range(40)}
files.update({f"conf/run{i}.yaml": [f"lr: 0.{j}\n" for j in range(10)] for i in range(10)})
alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
out = sys.stdout
for c in range(1, n + 1):
    name = r.choice(sorted(files))
    lines = files[name]
    lines[r.randrange(len(lines))] = f"# edit {c}\n"
    if c % 200 == 0:
        lines.append('TOKEN = "hf_' + "".join(r.choice(alnum) for _ in range(34)) + '"\n')
    data = "".join(lines).encode()
    out.write(f"commit refs/heads/main\ncommitter b <b@example.org> {1700000000 + c} +0000\ndata 8\ncommit {c % 10}\n")
    if c == 1:
        for f, ls in files.items():
            d = "".join(ls).encode()
            out.write(f"M 100644 inline {f}\ndata {len(d)}\n")
            out.flush(); sys.stdout.buffer.write(d); out.write("\n")
    else:
        out.write(f"M 100644 inline {name}\ndata {len(data)}\n")
        out.flush(); sys.stdout.buffer.write(data); out.write("\n")
PY
git -C "$repo" fast-import --quiet < "$work/stream"
git -C "$repo" checkout -q main
echo "repository: $(git -C "$repo" rev-list --count HEAD) commits"
since=$(median "$work/mlwarden" scan --checks secrets --format json git:"$repo" --since-commit HEAD~10)
full=$(median "$work/mlwarden" scan --checks secrets --format json git:"$repo")
echo "mlwarden --since-commit HEAD~10: ${since}s (median of $RUNS)"
echo "mlwarden full history:          ${full}s (median of $RUNS)"
awk -v a="$full" -v b="$since" 'BEGIN {printf "full / since-commit:            %.1fx\n", a / b}'
if [ -x "$GITLEAKS" ]; then
	gl=$(median "$GITLEAKS" git --no-banner --log-opts "HEAD~10..HEAD" "$repo")
	echo "gitleaks git --log-opts HEAD~10..HEAD: ${gl}s (median of $RUNS)"
	awk -v a="$gl" -v b="$since" 'BEGIN {printf "gitleaks / mlwarden since-commit:      %.2fx\n", a / b}'
else
	echo "gitleaks: not found (go install github.com/zricethezav/gitleaks/v8@v8.30.1)"
fi
