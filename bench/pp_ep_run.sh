#!/usr/bin/env bash
# pp_ep_run.sh — the pipeline (1F1B, TP x PP, interleaved) and MoE expert-parallel checks and
# measurements of bench/BACKEND.md's "Pipelines and MoE" section, in one call on a 4-GPU machine:
# the backend's GPU test (transfers received == sent, bubble measured, traces valid, EP runs),
# then plan measure of Llama-3.1-8B under PP 2 x DP 2 and TP 2 x PP 2 and of Mixtral-8x7B's shape
# (8 layers) under EP 4, each beside its prediction, with --trace files for Perfetto.
#
# Usage on the GPU machine, from the repository root, with the binaries built as
# backend/README.md says (BIN holds plan and test_backend_gpu):
#   BIN=.carry/pp bash bench/pp_ep_run.sh              # logs and traces under $OUT
#   BIN=.carry/pp PARTS="pp2dp2 ep4" bash bench/pp_ep_run.sh
# Parts (run in this order): pp2dp2 ep4 tp2pp2 test vpp2.
set -uo pipefail
OUT=${OUT:-pp-ep-run-out}
BIN=${BIN:-build/cli}
PARTS=" ${PARTS:-test pp2dp2 tp2pp2 ep4 vpp2} "
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
PLAN=$BIN/plan
log=$OUT/log.txt
say() { echo "=== $* ($(date +%T))" | tee -a "$log"; }
has() { [[ "$PARTS" == *" $1 "* ]]; }
if ldd "$PLAN" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
say "machine"
nvidia-smi -L >>"$log" 2>&1
S="--system h200-x4 --gpus 4 --steps 2"
if has pp2dp2; then
  say "plan measure 8b pp2 dp2"
  timeout ${MEASURE_TIMEOUT:-100} "$PLAN" measure --model 8b $S --pp 2 --gbs 16 --trace "$OUT/trace_pp2dp2.json" \
    >>"$log" 2>&1; echo "exit $?" >>"$log"
fi
if has ep4; then
  say "plan measure mixtral-8x7b-8l ep4 dp4"
  timeout ${MEASURE_TIMEOUT:-100} "$PLAN" measure --model tests/models/mixtral-8x7b-8l.json $S --ep 4 --gbs 16 \
    --trace "$OUT/trace_ep4.json" >>"$log" 2>&1; echo "exit $?" >>"$log"
fi
if has tp2pp2; then
  say "plan measure 8b tp2 pp2"
  timeout ${MEASURE_TIMEOUT:-100} "$PLAN" measure --model 8b $S --tp 2 --pp 2 --gbs 8 >>"$log" 2>&1
  echo "exit $?" >>"$log"
fi
if has test; then
  say "test_backend_gpu"
  timeout ${TEST_TIMEOUT:-150} "$BIN/test_backend_gpu" >>"$log" 2>&1; echo "exit $?" >>"$log"
fi
if has vpp2; then
  say "plan measure 8b pp2 vpp2 dp2"
  timeout ${MEASURE_TIMEOUT:-100} "$PLAN" measure --model 8b $S --pp 2 --vpp 2 --gbs 16 >>"$log" 2>&1
  echo "exit $?" >>"$log"
fi
say "done"
