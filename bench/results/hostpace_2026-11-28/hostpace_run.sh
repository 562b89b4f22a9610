#!/bin/bash
# hostpace_run.sh — issue 14 (hostpace): `plan measure` of single-GPU real runs, the GPU alone and
# issued at the host's pace (one process per run: plan measure times both), on one GPU.
# Run from the repository root of the GPU machine's tree with the carry folder D (default
# .carry/hostpace) holding plan, plan-gpu, runs.tsv and configs/ (make_runs.py), and base/ (the
# planner before this change, for a cross-check of the unpaced step). Writes $OUT/hostpace.tgz.
# LIMIT: seconds after which no new run starts (default 330).
set -u
D=${D:-.carry/hostpace}
LIMIT=${LIMIT:-330}
R=$OUT/hostpace
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
done < "$D/runs.tsv"
# the planner before this change on three runs: its step is the unpaced one
for lab in smol360m-s2k-b8 l1b-s4k-b1 l8b-L8-s4k-b2; do
  [ $(( $(date +%s) - start )) -gt $(( LIMIT + 40 )) ] && break
  args=$(awk -F'\t' -v l="$lab" '$1 == l {print $2}' "$D/runs.tsv")
  # shellcheck disable=SC2086
  [ -x "$D/base/plan" ] && one "base-$lab" "$D/base" $args
done
tar czf "$OUT/hostpace.tgz" -C "$OUT" hostpace
tail -n 40 "$log"
