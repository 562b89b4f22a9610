#!/usr/bin/env bash
# fp8_backend_run.sh — issue 16's FP8 backend run on one GPU, in one call: the GPU test (FP8 GEMM
# checks, FP8 plan steps), the FP8 GEMM comparison against torch._scaled_mm (bench/fp8_backend.py,
# which also writes the calibrate CSVs plan fit reads) and plan measure of a small model in bf16
# and FP8. Logs and results in $OUT.
#   PARTS    which parts: test fp8 measure (default all three)
#   CONFIGS  for the fp8 part, one run per LIB:N: LIB "system" (the CUDA toolkit's cuBLASLt, what
#            plan-gpu links) or "torch" (the cuBLASLt of PyTorch's wheel, by LD_LIBRARY_PATH, so
#            both sides run one library), N the PLAN_LT_CANDIDATES the backend autotunes (1: the
#            heuristic's first choice, as _scaled_mm; d: the backend's default). Default
#            "system:d".
#   ROUNDS   rounds of bench/fp8_backend.py (default 2)
# Everything ends up in $OUT/results.tgz (the device tool brings back few files).
# Usage on the GPU machine: BIN=.carry/fp8bk OUT=$OUT bash .carry/fp8bk/fp8_backend_run.sh
set -uo pipefail
BIN=${BIN:-build/cli}
OUT=${OUT:-fp8_out}
PY=${PY:-$(dirname "$0")/fp8_backend.py}
SYS=${SYS:-h100}
PARTS=${PARTS:-test fp8 measure}
CONFIGS=${CONFIGS:-system:d}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
if ldd "$BIN/plan-gpu" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
TORCH_LIB=$(python3 -c "import os, nvidia; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'lib'))" 2>/dev/null)
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  echo "torch's CUDA libraries: $TORCH_LIB"
  echo "ldd plan-gpu:"; ldd "$BIN/plan-gpu"
} > "$OUT/env.txt" 2>&1
case " $PARTS " in *" test "*)
  echo "== test_backend_gpu"
  timeout 200 "$BIN/test_backend_gpu" > "$OUT/test_backend_gpu.txt" 2>&1
  rc=$?
  echo "test_backend_gpu rc=$rc"; grep -E "fp8|FAIL|passed|FAILED" "$OUT/test_backend_gpu.txt" | head -30
  if [ $rc != 0 ]; then  # cuBLASLt's own reasons for a refused FP8 GEMM
    CUBLASLT_LOG_LEVEL=3 timeout 60 "$BIN/plan" calibrate --ops gemm_fp8 --shape 1024x512x768 -o /dev/null > "$OUT/cublaslt_log.txt" 2>&1
    grep -v "^$" "$OUT/cublaslt_log.txt" | head -40
  fi;;
esac
case " $PARTS " in *" fp8 "*)
  for cfg in $CONFIGS; do
    lib=${cfg%%:*}; cand=${cfg##*:}; d="$OUT/fp8_${lib}_c${cand}"; mkdir -p "$d"
    (
      [ "$lib" = torch ] && export LD_LIBRARY_PATH="$TORCH_LIB:${LD_LIBRARY_PATH:-}"
      if [ "$cand" = d ]; then unset PLAN_LT_CANDIDATES; else export PLAN_LT_CANDIDATES=$cand; fi
      ldd "$BIN/plan-gpu" | grep cublas > "$d/plan_cublas_libs.txt"
      echo "== fp8_backend.py, $lib cuBLASLt, PLAN_LT_CANDIDATES=$cand"
      timeout 300 python3 "$PY" --bin "$BIN" --models 8b,70b --rounds "$ROUNDS" --out "$d" > "$d/fp8_backend_log.txt" 2>&1
      echo "rc=$?"; tail -2 "$d/fp8_backend_log.txt"
    )
  done;;
esac
case " $PARTS " in *" measure "*)
  echo "== plan measure (1b, fsdp2 and megatron, bf16 vs fp8)"
  for args in "--framework fsdp2" "--framework fsdp2 --precision fp8 --fp8-recipe tensorwise" \
              "--framework megatron --sharding distopt" "--framework megatron --sharding distopt --precision fp8 --fp8-recipe delayed"; do
    echo "-- plan measure --model 1b --system $SYS --gpus 1 --gbs 4 $args"
    timeout 60 "$BIN/plan" measure --model 1b --system "$SYS" --gpus 1 --gbs 4 $args 2>&1
  done > "$OUT/measure_1b.txt" 2>&1
  grep -E "^-- |^plan:|step time|  compute  |    gemm  |lp.quantize" "$OUT/measure_1b.txt" | head -60;;
esac
tar czf /tmp/fp8_results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/fp8_results.tgz "$OUT/results.tgz"
