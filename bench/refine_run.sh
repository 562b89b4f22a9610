#!/usr/bin/env bash
# refine_run.sh — issues 4 and 5 on a GPU machine, in one call: `plan measure --refine` of
# Llama-3.1-8B on the local GPUs (the k best plans measured, step terms fitted, held-out error)
# and a small `plan bench --measure` sweep. Results and logs under $OUT (or ./refine-run-out);
# bench/BACKEND.md ("Step-level refit") has what one run gave.
#
# Usage on the GPU machine, from the repository root, with plan built as backend/README.md says:
#   BIN=.carry/refine bash bench/refine_run.sh
# Knobs: REFINE_GBS (16), K (6), BENCH_GBS (8), REFINE_TIMEOUT (210 s), BENCH_TIMEOUT (100 s).
set -uo pipefail
OUT=${OUT:-refine-run-out}
BIN=${BIN:-build/cli}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
PLAN=$BIN/plan
if ldd "$PLAN" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
CAL=data/systems/calibration/h200-x4-2026-11-21.json
R="--model 8b --system h200-x4 --calibration $CAL --gpus 4 --gbs ${REFINE_GBS:-16}"
log=$OUT/machine.txt
{ date -u; nvidia-smi -L; echo "refine: plan measure --refine $R --k ${K:-6}"; } >"$log" 2>&1
timeout "${REFINE_TIMEOUT:-210}" "$PLAN" measure --refine $R --k "${K:-6}" --format json \
  -o "$OUT/refined_profile.json" >"$OUT/refine.json" 2>"$OUT/refine.err"
echo "refine exit $? ($(date -u +%T))" >>"$log"
# The human table, refitted from the JSON just written (no GPU).
"$PLAN" measure --refine --from "$OUT/refine.json" $R >"$OUT/refine.txt" 2>&1
B="--models 8b --gpus 4 --system h200-x4 --gbs ${BENCH_GBS:-8}"
echo "bench: plan bench --measure $B" >>"$log"
timeout "${BENCH_TIMEOUT:-100}" "$PLAN" bench --measure $B -o "$OUT/bench.csv" 2>"$OUT/bench.err"
echo "bench exit $? ($(date -u +%T))" >>"$log"
cat "$log" "$OUT/refine.txt" "$OUT/bench.csv"
grep -E "measured|skipped|not measured|error" "$OUT/refine.err" "$OUT/bench.err"
