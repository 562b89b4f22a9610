#!/usr/bin/env bash
# fp8blk_run.sh — issue 16's second FP8 backend run on one GPU (bench/results/
# fp8_backend_2026-11-27/blockwise_run/): the FP8 parts of the GPU test (per-tensor and blockwise
# FP8 GEMM checks, the FP8 and blockwise plan steps), a cuBLASLt trace of one small-shape FP8
# GEMM from each caller (which algorithm, workspace and pointers each passes), the FP8 GEMM
# comparison against torch (bench/fp8_backend.py, per-tensor and blockwise) in one or more
# configurations, and plan measure of a small model in bf16, FP8 tensorwise and FP8 blockwise.
#   PARTS    any of: test probe cmp measure (default all)
#   CONFIGS  for cmp, one fp8_backend.py run per LIB:CD:MODELS:BLK: LIB "system" (the CUDA
#            toolkit's cuBLASLt, what plan-gpu links) or "torch" (the cuBLASLt of PyTorch's wheel,
#            by LD_LIBRARY_PATH, so both sides run one library); CD 1 sets PLAN_LT_C_IS_D=1 (the
#            backend passes C = D as before), 0 a distinct C as torch does; MODELS the
#            --models list; BLK 1 adds --blockwise. Default "system:0:8b,70b:1".
#   ROUNDS   rounds of fp8_backend.py (default 2); CMP_TIMEOUT seconds per configuration (150)
# Everything ends up in $OUT/results.tgz (the device tool brings back few files).
# Usage on the GPU machine: BIN=.carry/fp8blk OUT=$OUT bash .carry/fp8blk/fp8blk_run.sh
set -uo pipefail
BIN=${BIN:-build/cli}
OUT=${OUT:-fp8blk_out}
HERE=$(dirname "$0")
PY=${PY:-$HERE/fp8_backend.py}
SYS=${SYS:-h100}
PARTS=${PARTS:-test probe cmp measure}
CONFIGS=${CONFIGS:-system:0:8b,70b:1}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=${PLAN_DATA_DIR:-$PWD/data} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
if ldd "$BIN/plan-gpu" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
TORCH_LIB=$(python3 -c "import os, nvidia; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'lib'))" 2>/dev/null)
{
  echo "date: $(date -u +%FT%TZ)"
  echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  echo "torch's CUDA libraries: $TORCH_LIB"
  echo "ldd plan-gpu:"; ldd "$BIN/plan-gpu"
} > "$OUT/env.txt" 2>&1
head -4 "$OUT/env.txt" | tail -2
t0=$(date +%s)
case " $PARTS " in *" test "*)
  echo "== test_backend_gpu (PLAN_GPU_TEST_FP8_ONLY=1)"
  PLAN_GPU_TEST_FP8_ONLY=1 timeout 90 "$BIN/test_backend_gpu" > "$OUT/test_backend_gpu.txt" 2>&1
  rc=$?
  echo "test_backend_gpu rc=$rc ($(( $(date +%s) - t0 )) s)"; grep -E "fp8|FAIL|passed|FAILED|megatron" "$OUT/test_backend_gpu.txt" | head -30
  if [ $rc != 0 ]; then  # cuBLASLt's own reasons for a refused blockwise GEMM
    CUBLASLT_LOG_LEVEL=3 timeout 30 "$BIN/plan" calibrate --ops gemm_fp8_blockwise --shape 1024x512x768 -o /dev/null > "$OUT/cublaslt_log.txt" 2>&1
    grep -v "^$" "$OUT/cublaslt_log.txt" | head -30
  fi;;
esac
case " $PARTS " in *" probe "*)
  # the cuBLASLt trace (level 2: every kernel-launching call with its parameters) of the FP8
  # GEMMs at 8b mlp_down.tp4 (4096x4096x3584) and qkv.tp4 (4096x1536x4096), below 0.97x on H200
  echo "== cuBLASLt trace of one FP8 GEMM per caller"
  d="$OUT/probe"; mkdir -p "$d"
  for cd in 0 1; do
    PLAN_LT_C_IS_D=$cd CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$d/plan_cd$cd.log" timeout 30 \
      "$BIN/plan" calibrate --ops gemm_fp8 --shape 4096x4096x3584 --shape 4096x1536x4096 --repeats 1 -o "$d/plan_cd$cd.csv" > "$d/plan_cd$cd.txt" 2>&1
  done
  CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$d/torch.log" timeout 60 python3 - > "$d/torch.txt" 2>&1 <<'EOF'
import torch
for m, n, k in [(4096, 4096, 3584), (4096, 1536, 4096)]:
    x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    y = torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    print(m, n, k, y.shape)
EOF
  for f in "$d"/*.log; do
    echo "-- $f: $(grep -c cublasLtMatmul "$f") matmul lines"; grep -m3 -o "cublasLtMatmul.\{0,900\}" "$f" | grep -i "algo\|8F" | head -3 | cut -c1-900
  done
  echo "probe ($(( $(date +%s) - t0 )) s)";;
esac
case " $PARTS " in *" cmp "*)
  for cfg in $CONFIGS; do
    IFS=: read -r lib cd models blk <<< "$cfg"
    d="$OUT/cmp_${lib}_cd${cd}_$(echo "$models" | tr ',' '-')_blk${blk}"; mkdir -p "$d"
    (
      [ "$lib" = torch ] && export LD_LIBRARY_PATH="$TORCH_LIB:${LD_LIBRARY_PATH:-}"
      export PLAN_LT_C_IS_D=$cd
      ldd "$BIN/plan-gpu" | grep cublas > "$d/plan_cublas_libs.txt"
      extra=""; [ "$blk" = 1 ] && extra="--blockwise"
      echo "== fp8_backend.py, $lib cuBLASLt, PLAN_LT_C_IS_D=$cd, models $models $extra"
      timeout "${CMP_TIMEOUT:-150}" python3 "$PY" --bin "$BIN" --models "$models" --rounds "$ROUNDS" --out "$d" $extra > "$d/fp8_backend_log.txt" 2>&1
      echo "rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "^shapes|^blockwise through|refused" "$d/fp8_backend_log.txt" | head -5
    )
  done;;
esac
case " $PARTS " in *" measure "*)
  echo "== plan measure (1b, megatron, bf16 vs fp8 tensorwise vs fp8 blockwise)"
  for args in "--framework megatron --sharding distopt" "--framework megatron --sharding distopt --precision fp8 --fp8-recipe tensorwise" \
              "--framework megatron --sharding distopt --precision fp8 --fp8-recipe blockwise"; do
    echo "-- plan measure --model 1b --system $SYS --gpus 1 --gbs 4 $args"
    timeout 60 "$BIN/plan" measure --model 1b --system "$SYS" --gpus 1 --gbs 4 $args 2>&1
  done > "$OUT/measure_1b.txt" 2>&1
  grep -E "^-- |^plan:|step time|  compute  |    gemm  |lp.quantize" "$OUT/measure_1b.txt" | head -40
  echo "measure ($(( $(date +%s) - t0 )) s)";;
esac
tar czf /tmp/fp8blk_results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/fp8blk_results.tgz "$OUT/results.tgz"
