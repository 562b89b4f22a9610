#!/usr/bin/env bash
# gemm_pairs.sh — bf16 GEMM 8192^3: plan calibrate (cuBLASLt, autotuned) against torch.matmul,
# in interleaved pairs with the order alternating every round (so neither always runs on the
# hotter GPU), cold (3 warm-up launches) and sustained (1 s of back-to-back launches first).
# One GPU. Usage: BIN=.carry/fin ROUNDS=6 bash bench/gemm_pairs.sh   (prints one line per run)
set -uo pipefail
BIN=${BIN:-build/cli}
ROUNDS=${ROUNDS:-6}
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
if ldd "$BIN/plan" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
p() { echo -n "round $1 $2 plan  "; timeout 60 "$BIN/plan" calibrate --ops gemm --shape 8192x8192x8192 --warmup-ms $3 -o /dev/null 2>/dev/null | grep "^8192x" ; }
t() { echo -n "round $1 $2 torch "; timeout 60 python3 bench/torch_gemm.py --only square8192 --warmup-s $(( $3 / 1000 )) 2>&1 | grep "^torch.matmul"; }
for r in $(seq 1 "$ROUNDS"); do
  for w in 0 1000; do
    st=$([ $w = 0 ] && echo cold || echo sustained)
    if [ $((r % 2)) = 1 ]; then p $r $st $w; t $r $st $w; else t $r $st $w; p $r $st $w; fi
  done
done
