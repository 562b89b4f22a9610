#!/bin/bash
# meas12_run.sh — issue 14: `plan measure` of every single-GPU H200 real run, one process per
# run (plan measure times the step unpaced and host-paced, then the items alone).
# Run from the repository root of the GPU machine's tree; D (default .carry/meas12) holds
# plan, plan-gpu, runs.tsv and configs/ (make_runs.py). Writes $OUT/meas12/: machine.txt,
# log.txt, LABEL.json (plan measure --format json), LABEL.err (its stderr).
# LIMIT: seconds after which no new run starts (default 120). NAME (default meas12) names the
# carry folder, the output folder and the pack; RUN_TIMEOUT the seconds per run (default 40).
set -u
NAME=${NAME:-meas12}
D=${D:-.carry/$NAME}
LIMIT=${LIMIT:-120}
R=$OUT/$NAME
mkdir -p "$R"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
if ldd "$D/plan-gpu" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         grep -v site-packages | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  nvidia-smi -L
  lscpu | grep -E "Model name|^CPU\(s\)"
  uname -r
  ldd "$D/plan-gpu" | grep -E "cublas|nccl|mpi|not found"
  ls -l /usr/local/cuda 2>/dev/null; nvcc --version 2>/dev/null | tail -1
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>/dev/null
  (cd "$D" && sha256sum plan plan-gpu)
} > "$R/machine.txt" 2>&1
start=$(date +%s)
log=$R/log.txt
while IFS=$'\t' read -r lab args; do
  [ -z "$lab" ] && continue
  if [ $(( $(date +%s) - start )) -gt "$LIMIT" ]; then echo "$lab not run (time limit)" >> "$log"; continue; fi
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  timeout "${RUN_TIMEOUT:-40}" "$D/plan" $args > "$R/$lab.json" 2> "$R/$lab.err" < /dev/null
  rc=$?
  printf "%-26s rc %d %6.1f s  %s\n" "$lab" $rc "$(awk "BEGIN{print $(date +%s.%N) - $t0}")" "$args" >> "$log"
done < "$D/runs.tsv"
tail -n 30 "$log"
tar czf "$OUT/$NAME.tgz" -C "$OUT" "$NAME" && rm -rf "$R"
