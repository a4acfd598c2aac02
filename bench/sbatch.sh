#!/usr/bin/env bash
# bench/sbatch.sh — what the Slurm hook costs per script (issue 21): the
# exec mode, one process per job as job_submit.lua runs it without a socket,
# for `mlwarden sbatch` and for the hook's own binary mlwarden-sbatch (go
# build -tags mlwarden_sbatch); and the socket mode, one request to
# `mlwarden sbatch --serve` over its Unix socket as job_submit.lua sends it
# with lua-socket (no process start).
#
# Builds mlwarden, mlwarden-sbatch and a hello-world Go binary as released
# (CGO_ENABLED=0, -trimpath, -s -w), and times
# whole processes started by posix_spawn from one Python loop (no shell in
# between): /bin/true and hello as the floor, then each binary on three
# scripts — the clean 60-line training job of deploy/slurm/latency.sh, the
# demo's train.sbatch (rejected: a pip index), and a job with a Hugging Face
# token made at run time (rejected). The commands run round robin (3 warm-up
# rounds, then RUNS rounds), so that a change of load touches all alike.
# Prints the median and p90 wall time and the median CPU time (user+sys) of
# each, and the ratio of each median to /bin/true's and hello's.
#
#   bench/sbatch.sh                  # RUNS=50
#   BASE=<git ref> bench/sbatch.sh   # also mlwarden and mlwarden-sbatch as built at that commit
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-50}
work=$(mktemp -d /tmp/mlwarden-sbatch-bench.XXXXXX)
trap 'kill "${server:-}" 2>/dev/null || true; git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# Built as released (.goreleaser.yaml): static, stripped.
export CGO_ENABLED=0
release=(-trimpath -ldflags "-s -w")
go build "${release[@]}" -o "$work/mlwarden" ./cmd/mlwarden
go build "${release[@]}" -tags mlwarden_sbatch -o "$work/mlwarden-sbatch" ./cmd/mlwarden
mkdir "$work/hello"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' >"$work/hello/main.go"
(cd "$work/hello" && go mod init hello >/dev/null 2>&1 && go build "${release[@]}" -o "$work/hello-go" .)
bins=(mlwarden mlwarden-sbatch)
if [ -n "${BASE:-}" ]; then
	git worktree add --detach "$work/base" "$BASE" >/dev/null 2>&1
	(cd "$work/base" && go build "${release[@]}" -o "$work/mlwarden-base" ./cmd/mlwarden &&
		go build "${release[@]}" -tags mlwarden_sbatch -o "$work/mlwarden-sbatch-base" ./cmd/mlwarden)
	bins=(mlwarden-base mlwarden-sbatch-base "${bins[@]}")
fi

# The scripts: latency.sh's clean job (its here-document), the demo, a token.
sed -n "/^	cat <<'EOF'$/,/^EOF$/p" deploy/slurm/latency.sh | sed '1d;$d' >"$work/job.sbatch"
[ "$(wc -l <"$work/job.sbatch")" -gt 50 ] || { echo "could not read the job of deploy/slurm/latency.sh" >&2; exit 1; }
cp fixtures/demo/train.sbatch "$work/demo.sbatch"
/usr/bin/python3 - "$work/token.sbatch" <<'PY'
import random, string, sys
r = random.Random(21)
tok = "hf_" + "".join(r.choice(string.ascii_letters + string.digits) for _ in range(34))
open(sys.argv[1], "w").write("#!/bin/bash\n#SBATCH --time=10\n#SBATCH --gres=gpu:1\nexport HF_TOKEN=%s\nsrun python train.py\n" % tok)
PY

sock=$work/sbatch.sock
"$work/mlwarden" sbatch --serve "$sock" 2>"$work/serve.log" &
server=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done

printf '%s runs each, %s CPUs, load %s\n' "$RUNS" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$work" "$RUNS" "$sock" "${bins[@]}" <<'PY'
import os, socket, statistics, sys, time
work, runs, sock, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
devnull = os.open(os.devnull, os.O_RDWR)
rows = []

def spawn(argv):
    s = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, ru = os.wait4(pid, 0)
    return (time.perf_counter() - s) * 1000, (ru.ru_utime + ru.ru_stime) * 1000, os.waitstatus_to_exitcode(status)

def netstring(b):
    return b"%d:%s," % (len(b), b)

def ask(script):
    s = time.perf_counter()
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    c.sendall(netstring(b"name") + netstring(b"job script") + netstring(b"script") + netstring(script))
    out = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        out += b
    c.close()
    first = out.split(b"\n", 1)[0]  # "exit N"
    return (time.perf_counter() - s) * 1000, None, int(first[5:]) if first.startswith(b"exit ") else -1

cmds = [("/bin/true", lambda: spawn(["/bin/true"])), ("hello (Go)", lambda: spawn([work + "/hello-go"]))]
for script in ("job", "demo", "token"):
    path = "%s/%s.sbatch" % (work, script)
    for b in bins:
        cmds.append(("%s sbatch %s.sbatch" % (b, script), lambda b=b, path=path: spawn([work + "/" + b, "sbatch", path])))
    data = open(path, "rb").read()
    cmds.append(("socket %s.sbatch" % script, lambda data=data: ask(data)))
# Round robin, so that a change of load touches every command alike.
res = {label: ([], [], set()) for label, _ in cmds}
for rnd in range(runs + 3):
    for label, fn in cmds:
        w, c, code = fn()
        if rnd < 3:
            continue  # warm-up
        res[label][0].append(w)
        if c is not None:
            res[label][1].append(c)
        res[label][2].add(code)
for label, _ in cmds:
    wall, cpu, codes = res[label]
    wall.sort()
    rows.append((label, statistics.median(wall), wall[int(len(wall) * 0.9)], statistics.median(cpu) if cpu else None, sorted(codes)))

true_ms, hello_ms = rows[0][1], rows[1][1]
print("%-42s %9s %8s %9s %8s %8s  %s" % ("command", "median_ms", "p90_ms", "cpu_ms", "x_true", "x_hello", "exit"))
for label, med, p90, cpu, codes in rows:
    print("%-42s %9.2f %8.2f %9s %8.1f %8.1f  %s" % (label, med, p90, "%.2f" % cpu if cpu is not None else "-",
                                                   med / true_ms, med / hello_ms, ",".join(map(str, codes))))
PY
