#!/usr/bin/env bash
# issue9_run.sh — issue 9's full-node layouts scaled to the 4-GPU H200 host (no 8-GPU machine is
# lent): plan measure of Llama-3.1-8B under TP 4, PP 4 and FSDP2 over 4, each beside its
# prediction (TP 2 x DP 2, TP 2 x PP 2, PP 2 x DP 2 and the MoE EP 4 case are in
# bench/pp_ep_run.sh). Usage on the GPU machine: BIN=.carry/i9 bash bench/issue9_run.sh
set -uo pipefail
OUT=${OUT:-issue9-out}
BIN=${BIN:-build/cli}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
PLAN=$BIN/plan
if ldd "$PLAN" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
S="--model 8b --system h200-x4 --gpus 4 --steps 2 --format json"
run() {
  name=$1; shift
  echo "=== $name $(date +%T)" | tee -a "$OUT/log.txt"
  timeout ${MEASURE_TIMEOUT:-60} "$PLAN" measure $S "$@" >"$OUT/$name.json" 2>>"$OUT/log.txt"
  echo "exit $?" >>"$OUT/log.txt"
}
run tp4 --tp 4 --gbs 8
run pp4 --pp 4 --gbs 16
run fsdp4 --framework fsdp2 --gbs 4
