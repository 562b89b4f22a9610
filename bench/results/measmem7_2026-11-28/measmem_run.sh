#!/bin/bash
# measmem_run.sh — issue 14 (measmem7): `plan measure` of the single-GPU real runs of
# bench/results/hostpace_2026-11-28 with the backend's phased memory arena, on one GPU; the same
# driver as hostpace_run.sh (one process per run: plan measure times the step unpaced and paced,
# then the items alone), plus the binaries call2 of hostpace ran (base/) on a few runs in the
# same call, so that step times compare on one machine.
# Run from the repository root of the GPU machine's tree with the carry folder D (default
# .carry/measmem7) holding plan, plan-gpu, test_backend_gpu, configs/, the run list RUNS
# (label TAB arguments; make_runs.py's runs.tsv, split), base/plan and base/plan-gpu.
# BASE: labels run again with base/ (space-separated). GPUTEST=1: test_backend_gpu last, until
# DEADLINE (default 200) seconds after the start. LIMIT: seconds after which no new run starts.
# Writes $OUT/measmem.tgz.
set -u
D=${D:-.carry/measmem7}
RUNS=${RUNS:-$D/runs.tsv}
LIMIT=${LIMIT:-150}
BASE=${BASE:-}
R=$OUT/measmem
mkdir -p "$R"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
if ldd "$D/plan-gpu" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  nvidia-smi -L
  lscpu | grep -E "Model name|^CPU\(s\)"
  uname -r
  ldd "$D/plan-gpu" | grep -E "cublas|nccl|not found"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>/dev/null
  echo "runs: $RUNS  base: $BASE  gputest: ${GPUTEST:-0}"
} > "$R/machine.txt" 2>&1
start=$(date +%s)
log=$R/log.txt
one() { # label bin args...
  local lab=$1 bin=$2; shift 2
  local t0=$(date +%s.%N)
  timeout 120 "$bin/plan" "$@" > "$R/$lab.json" 2> "$R/$lab.err"
  local rc=$?
  printf "%-28s rc %d %6.1f s  %s\n" "$lab" $rc "$(awk "BEGIN{print $(date +%s.%N) - $t0}")" "$*" >> "$log"
}
while IFS=$'\t' read -r lab args; do
  [ -z "$lab" ] && continue
  if [ $(( $(date +%s) - start )) -gt "$LIMIT" ]; then echo "$lab not run (time limit)" >> "$log"; continue; fi
  # shellcheck disable=SC2086
  one "$lab" "$D" $args
done < "$RUNS"
for lab in $BASE; do
  [ $(( $(date +%s) - start )) -gt $(( LIMIT + 30 )) ] && { echo "base-$lab not run (time limit)" >> "$log"; continue; }
  args=$(awk -F'\t' -v l="$lab" '$1 == l {print $2}' "$D/runs.tsv")
  # shellcheck disable=SC2086
  [ -x "$D/base/plan" ] && one "base-$lab" "$D/base" $args
done
if [ "${GPUTEST:-0}" = 1 ]; then # until DEADLINE seconds after the start (default 200)
  left=$(( ${DEADLINE:-200} - ($(date +%s) - start) ))
  [ $left -lt 10 ] && left=10
  t0=$(date +%s)
  timeout $left "$D/test_backend_gpu" > "$R/test_backend_gpu.txt" 2>&1
  echo "test_backend_gpu rc $? $(( $(date +%s) - t0 )) s (timeout $left s)" >> "$log"
fi
tar czf "$OUT/measmem.tgz" -C "$OUT" measmem
tail -n 40 "$log"
