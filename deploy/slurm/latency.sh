#!/bin/bash
# deploy/slurm/latency.sh — what the job_submit hook adds to each sbatch call.
#
# Starts the loopback cluster of .ci/slurm.sh three times — without the
# plugin (the baseline), with job_submit.lua running mlwarden-sbatch (the
# hook's binary, which .ci/slurm.sh builds) for each job (exec; bench/sbatch.sh
# times the process alone, beside mlwarden), and with job_submit.lua asking
# `mlwarden sbatch --serve` over a
# Unix socket (socket) — submits N held copies of a typical 60-line training
# script to each, and prints the median and p99 of sbatch's wall time and
# what the hook adds to them.
#
# Usage, as root, from the repository root: deploy/slurm/latency.sh [N]
set -euo pipefail
N=${1:-200}
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A typical training job: 60 lines, clean (so that every job is accepted).
{
	cat <<'EOF'
#!/bin/bash
#SBATCH --job-name=llm-finetune
#SBATCH --partition=debug
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=1
#SBATCH --time=00:10:00
#SBATCH --output=/dev/null
#SBATCH --error=/dev/null
#SBATCH --hold
#SBATCH --mail-type=END,FAIL
#SBATCH --exclusive
#
# Fine-tune a language model on the cluster's data set.
set -euo pipefail

export OMP_NUM_THREADS=8
export NCCL_DEBUG=WARN
export NCCL_IB_DISABLE=0
export HF_HOME=/scratch/$USER/hf
export HF_HUB_OFFLINE=1
export WANDB_MODE=offline
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500

module purge
module load cuda/12.4 nccl/2.21

DATA=/datasets/corpus-v3
OUT=/scratch/$USER/runs/$SLURM_JOB_ID
mkdir -p "$OUT"

IMAGE=registry.example.com/nvidia/pytorch:24.01-py3@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef

echo "job $SLURM_JOB_ID on $(hostname) at $(date)"
nvidia-smi --query-gpu=name,driver_version --format=csv || true

srun --container-image="$IMAGE" \
	--container-mounts="$DATA:/data:ro,$OUT:/out" \
	torchrun --nnodes="$SLURM_NNODES" --nproc-per-node=8 \
	--rdzv-backend=c10d --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT" \
	train.py \
	--model /models/base-7b \
	--data /data \
	--output /out \
	--epochs 3 \
	--lr 2e-5 \
	--batch-size 8 \
	--gradient-checkpointing \
	--bf16

status=$?
if [ "$status" -ne 0 ]; then
	echo "training failed with $status" >&2
	exit "$status"
fi

python summarize.py --run "$OUT" > "$OUT/summary.txt"
cp "$OUT/summary.txt" "$HOME/results/$SLURM_JOB_ID.txt"
echo "done at $(date)"
EOF
} >"$work/job.sh"
lines=$(wc -l <"$work/job.sh")

measure() {
	local label=$1 s e
	for _ in 1 2 3 4 5; do sbatch "$work/job.sh" >/dev/null; done # warm up
	for _ in $(seq "$N"); do
		s=$(date +%s%N)
		sbatch "$work/job.sh" >/dev/null
		e=$(date +%s%N)
		echo $(((e - s) / 1000))
	done >"$work/$label.us"
	scancel --quiet --state=PENDING || true
}

stat() { # file → "median p99" in microseconds
	sort -n "$1" | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; i=int(NR*0.99+0.999); if (i>NR) i=NR; print m, a[i]}'
}

export MLWARDEN_SLURM_SH=$repo/.ci/slurm.sh
# shellcheck source=/dev/null
MLWARDEN_TEST_SLURM_PLUGIN=0 . "$repo/.ci/slurm.sh"
measure baseline
# shellcheck source=/dev/null
MLWARDEN_TEST_SLURM_PLUGIN=1 . "$repo/.ci/slurm.sh"
measure exec

sock=$MLWARDEN_TEST_SLURM_DIR/sbatch.sock
"$MLWARDEN_TEST_SLURM_BIN" sbatch --serve "$sock" 2>"$work/serve.log" &
server=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
sed -i "s|^local SOCKET = nil$|local SOCKET = \"$sock\"|" "$MLWARDEN_TEST_SLURM_DIR/job_submit.lua"
touch -d '+2 seconds' "$MLWARDEN_TEST_SLURM_DIR/job_submit.lua"
sleep 2
measure socket
kill "$server"
wait "$server" 2>/dev/null || true
slurm_stop

read -r bm bp < <(stat "$work/baseline.us")
printf '%s submissions of a %s-line script per mode, %s CPUs, load %s\n' "$N" "$lines" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %12s %12s %14s %14s\n' mode median_ms p99_ms added_med_ms added_p99_ms
for m in baseline exec socket; do
	read -r md p < <(stat "$work/$m.us")
	awk -v m="$m" -v md="$md" -v p="$p" -v bm="$bm" -v bp="$bp" 'BEGIN {
		printf "%-9s %12.1f %12.1f %14.1f %14.1f\n", m, md/1000, p/1000, (md-bm)/1000, (p-bp)/1000 }'
done
grep -c "checked a script" "$work/serve.log" | xargs printf 'checker answered %s checks\n'
# The checker's own time per check (its log: "checked a script: exit 0 in 1.23ms").
sed -n 's/.* in \([0-9.]*\)\(µs\|ms\|s\)$/\1 \2/p' "$work/serve.log" |
	awk '{v=$1; if ($2=="µs") v/=1000; if ($2=="s") v*=1000; print v}' | sort -n |
	awk '{a[NR]=$1} END {if (NR) printf "checker time per check: median %.2f ms, p99 %.2f ms\n", a[int((NR+1)/2)], a[int(NR*0.99+0.999)]}'
