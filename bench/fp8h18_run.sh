#!/usr/bin/env bash
# fp8h18_run.sh — issue 16 (fp8h18): the H200's FP8 efficiency by shape, in one device call.
# plan calibrate's bf16, FP8 (per-tensor) and blockwise FP8 GEMMs at the shapes of
# bench/results/fp8h18_2026-11-28/shapes.txt (the guide's recommended H200 plans' FP8 GEMMs,
# forward, dgrad and wgrad, then plan calibrate's own 8b/70b shapes), torch._scaled_mm at the same
# shapes interleaved per group of 8 (bench/fp8_backend.py --shapes --group 8), loop timing,
# one round; each FP8 result checked against the fp32 product of its dequantized operands.
#   DEADLINE  seconds after which fp8_backend.py starts no further group (default 36)
# Usage on the GPU machine: BIN=.carry/fp8h18 OUT=$OUT bash .carry/fp8h18/fp8h18_run.sh
set -uo pipefail
BIN=${BIN:-build/cli}
OUT=${OUT:-fp8h18_out}
HERE=$(dirname "$0")
DEADLINE=${DEADLINE:-36}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=${PLAN_DATA_DIR:-$PWD/data} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
if ldd "$BIN/plan-gpu" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
{
  echo "date: $(date -u +%FT%TZ)"
  echo "command: BIN=$BIN DEADLINE=$DEADLINE bash $0"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
  nvcc --version 2>/dev/null | tail -2
  p=$(ldd "$BIN/plan-gpu" | awk '/libcublasLt/ {print $3}')
  python3 -c "import ctypes, sys; print('backend cuBLASLt', ctypes.CDLL(sys.argv[1]).cublasLtGetVersion(), sys.argv[1])" "$p"
  ldd "$BIN/plan-gpu" | grep -E "cublas|nccl|mpi"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 56 python3 "$HERE/fp8_backend.py" --bin "$BIN" --shapes "$HERE/shapes.txt" --rounds 1 \
  --group 8 --backend-blockwise --timing loop --deadline-s "$DEADLINE" --out "$OUT/cmp" \
  > "$OUT/fp8_backend_log.txt" 2>&1
echo "fp8_backend.py rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "^shapes|deadline|Error|error|FAILED" "$OUT/fp8_backend_log.txt" | tail -5
echo "end: $(date -u +%FT%TZ)" >> "$OUT/env.txt"
