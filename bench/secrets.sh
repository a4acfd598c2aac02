#!/usr/bin/env bash
# Benchmark of the secrets check against the gitleaks CLI of the same module
# version (issue 3). It generates two corpora with fake secrets (made at run
# time from a seed; nothing format-valid is stored), runs both tools on each,
# and prints the median wall time, the ratio and how many planted secrets each
# found:
#   (a) A_MB of text files (configs, scripts, code) with secrets sprinkled in;
#   (b) an ML repository: code and configs plus B_MB of model weights
#       (.safetensors, .pt, .bin) that the secrets check leaves to the models
#       check instead of regexing them byte by byte;
#   (c) issue 21's ML tree (bench/imagelayout -dir: code, configs, logs and
#       notebooks dense with key/token words, base64 PNG outputs, weights;
#       TREE_MB in all, 65 planted credentials; TREE_MB=0 skips it), found
#       counted by file.
# Then the whole-process wall time of `mlwarden scan --checks secrets
# one.sbatch`, median of SBATCH_RUNS.
#
# Usage: bench/secrets.sh            (the issue's sizes: A_MB=200 B_MB=2048 TREE_MB=200)
#        A_MB=50 B_MB=256 RUNS=3 RUNS_B=1 bench/secrets.sh   (smaller, for a busy machine)
#        CORPORA=c bench/secrets.sh   (some of the corpora)
# Prints the median wall time, CPU time and peak RSS of each tool.
# Needs: go, python3 (standard library only). Network: the Go module proxy,
# once, to build gitleaks.
set -euo pipefail

A_MB=${A_MB:-200}
B_MB=${B_MB:-2048}
RUNS=${RUNS:-5}
RUNS_B=${RUNS_B:-$RUNS} # corpus (b) runs; gitleaks reads every weight byte, so it is slow
TREE_MB=${TREE_MB:-200}
SBATCH_RUNS=${SBATCH_RUNS:-20}
SEED=${SEED:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d -t mlwarden-bench-secrets-XXXXXX)}
KEEP=${KEEP:-0}
[ "$KEEP" = 1 ] || trap 'rm -rf "$WORK"' EXIT

GL_VERSION=$(awk '$1=="github.com/zricethezav/gitleaks/v8"{print $2}' "$ROOT/go.mod")
echo "work dir: $WORK"
echo "gitleaks $GL_VERSION; corpus (a) ${A_MB} MB text; corpus (b) ${B_MB} MB weights; $RUNS runs each"

mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/mlwarden" ./cmd/mlwarden && go build -o "$WORK/bin/imagelayout" ./bench/imagelayout)
# The same as `go run github.com/zricethezav/gitleaks/v8@$GL_VERSION`, built
# once so that compile time is not measured.
GOBIN="$WORK/bin" go install "github.com/zricethezav/gitleaks/v8@$GL_VERSION"
MLW="$WORK/bin/mlwarden"
GL="$WORK/bin/gitleaks"

# gen.py writes a corpus and a manifest (path:line of each planted secret).
cat > "$WORK/gen.py" <<'PY'
import os, random, string, sys, base64
kind, out, mb, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
r = random.Random(seed)
AL = string.ascii_letters + string.digits
def s(chars, n): return ''.join(r.choice(chars) for _ in range(n))
def hx(n): return s('0123456789abcdef', n)
# Formats as documented in rules/secrets.toml.
makers = [
    lambda: 'export HF_TOKEN=hf_' + s(AL, 34),
    lambda: '#SBATCH --export=ALL,WANDB_API_KEY=' + hx(40) + ',OMP_NUM_THREADS=8',
    lambda: 'ENV NVIDIA_API_KEY=nvapi-' + s(AL + '_-', 64),
    lambda: 'client = OpenAI(api_key="sk-proj-' + s(AL, 74) + 'T3BlbkFJ' + s(AL, 74) + '")',
    lambda: 'ANTHROPIC_API_KEY = "sk-ant-api03-' + s(AL, 93) + 'AA"',
    lambda: 'export AWS_ACCESS_KEY_ID=AKIA' + s('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16),
    lambda: 'token = dapi' + hx(32),
    lambda: 'GITHUB_TOKEN: ghp_' + s(AL, 36),
]
filler = [
    'lr: {f}', 'batch_size: {i}', 'for step in range({i}):', '    loss = model(x[{i}]).sum() * {f}',
    'srun python train.py --epochs {i} --lr {f}', '# checkpoint every {i} steps', 'name: run-{i}',
    'echo "epoch {i} done"', 'x = torch.randn({i}, {i})', 'optimizer.step()  # {f}',
    'model_name: meta-llama/Llama-3-{i}B', 'warmup_ratio = {f}', 'export OMP_NUM_THREADS={i}',
]
exts = ['.py', '.sh', '.yaml', '.json', '.toml', '.sbatch', '.env', '.cfg']
manifest = open(os.path.join(out, '..', kind + '.manifest'), 'w')
os.makedirs(out, exist_ok=True)
text_bytes = mb << 20 if kind == 'a' else 8 << 20
file_size = 100 << 10
nfiles = max(1, text_bytes // file_size)
for n in range(nfiles):
    d = os.path.join(out, 'src', 'pkg%02d' % (n % 50))
    os.makedirs(d, exist_ok=True)
    rel = os.path.relpath(os.path.join(d, 'f%05d%s' % (n, exts[n % len(exts)])), out)
    lines, size = [], 0
    while size < file_size:
        l = r.choice(filler).format(i=r.randint(1, 4096), f=round(r.random(), 5))
        lines.append(l); size += len(l) + 1
    if n % 10 == 0:
        k = r.randrange(len(lines))
        lines[k] = r.choice(makers)()
        manifest.write('%s:%d\n' % (rel, k + 1))
    open(os.path.join(out, rel), 'w').write('\n'.join(lines) + '\n')
if kind == 'b':
    w = os.path.join(out, 'checkpoints')
    os.makedirs(w, exist_ok=True)
    names = ['model-%05d.safetensors', 'pytorch_model-%05d.bin', 'optimizer-%05d.pt']
    per = 256 << 20
    left, i = mb << 20, 0
    while left > 0:
        n = min(per, left)
        with open(os.path.join(w, names[i % 3] % i), 'wb') as f:
            f.write(len(b'{}').to_bytes(8, 'little') + b'{}' if i % 3 == 0 else b'PK\x03\x04')
            f.write(os.urandom(n))
        left -= n; i += 1
manifest.close()
PY

median() { sort -n | awk '{a[NR]=$1} END{print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# timeit N CMD... prints the median wall time, the median CPU time
# (user+system, less sensitive to a busy machine) in seconds and the median
# peak RSS in MB of N runs.
timeit() {
  local n=$1; shift
  local f; f=$(mktemp)
  for _ in $(seq "$n"); do
    /usr/bin/time -q -f '%e %U %S %M' -o "$f" -a "$@" >/dev/null 2>&1 || true
  done
  local wall cpu rss
  wall=$(awk '{print $1}' "$f" | median)
  cpu=$(awk '{print $2+$3}' "$f" | median)
  rss=$(awk '{print int($4/1024)}' "$f" | median)
  rm -f "$f"
  echo "$wall $cpu $rss"
}

# found MANIFEST REPORT TOOL: how many planted path:line pairs the report names.
found() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
planted = set(open(sys.argv[1]).read().split())
rep = json.load(open(sys.argv[2]))
bylines = all(':' in p for p in planted)  # path:line, or (corpus c) paths
if sys.argv[3] == 'gitleaks':
    got = {(f['File'].split('/corpus/', 1)[-1].split('/', 1)[-1], f['StartLine']) for f in rep}
else:
    got = {(f['path'], f['line']) for f in rep['findings']}
got = {'%s:%d' % g if bylines else g[0] for g in got}
print('%d/%d planted found, %d findings' % (len(planted & got), len(planted), len(rep if isinstance(rep, list) else rep['findings'])))
PY
}

corpora=${CORPORA:-a b c}
[ "$TREE_MB" -gt 0 ] || corpora=${corpora//c/}
for c in $corpora; do
  mb=$A_MB runs=$RUNS; [ $c = b ] && mb=$B_MB runs=$RUNS_B; [ $c = c ] && mb=$TREE_MB
  dir="$WORK/corpus/$c"
  mkdir -p "$dir"
  if [ $c = c ]; then
    rmdir "$dir" && "$WORK/bin/imagelayout" -dir "$dir" -tree "$mb" -seed "$SEED" # and $dir.manifest
  else
    python3 "$WORK/gen.py" $c "$dir" "$mb" "$SEED"
  fi
  echo
  echo "== corpus ($c): $(du -sh "$dir" | cut -f1), $(find "$dir" -type f | wc -l) files"
  read -r gl_t gl_c gl_m < <(timeit "$runs" "$GL" dir "$dir" --no-banner --log-level error --exit-code 0 --report-format json --report-path "$WORK/gl-$c.json")
  read -r ml_t ml_c ml_m < <(timeit "$runs" "$MLW" scan --checks secrets --fail-on none --format json --output "$WORK/ml-$c.json" "$dir")
  echo "gitleaks dir:        median wall ${gl_t}s cpu ${gl_c}s rss ${gl_m} MB   $(found "$WORK/corpus/$c.manifest" "$WORK/gl-$c.json" gitleaks)"
  echo "mlwarden --secrets:  median wall ${ml_t}s cpu ${ml_c}s rss ${ml_m} MB   $(found "$WORK/corpus/$c.manifest" "$WORK/ml-$c.json" mlwarden)"
  echo "ratio mlwarden/gitleaks: wall $(echo "$ml_t / $gl_t" | bc -l | cut -c1-5), cpu $(echo "$ml_c / $gl_c" | bc -l | cut -c1-5)"
  rm -rf "$dir"
done

echo
printf '#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gres=gpu:8\nexport HF_HOME=/scratch/hf\nsrun python train.py --lr 1e-4\n' > "$WORK/one.sbatch"
read -r sb_t sb_c _ < <(timeit "$SBATCH_RUNS" "$MLW" scan --checks secrets "$WORK/one.sbatch")
echo "mlwarden scan --checks secrets one.sbatch: median wall ${sb_t}s, cpu ${sb_c}s of $SBATCH_RUNS runs (whole process)"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
