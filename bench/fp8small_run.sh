#!/usr/bin/env bash
# fp8small_run.sh — issue 16's short FP8 shapes on one H200, in one device call
# (bench/results/fp8small17b_2026-11-28/): the FP8 parts of the GPU test; cuBLASLt traces
# (CUBLASLT_LOG_LEVEL=2: the kernel, descriptors and workspace of each launch) of the shapes that
# ran below 0.97x, from the backend and from torch._scaled_mm; then bench/fp8_backend.py
# (per-tensor FP8 only, --group 6) alternating --timing loop and --timing host-ahead, so that
# both timings of both sides share the run.
#   PAIRS   loop/host-ahead pairs of fp8_backend.py runs, ROUNDS rounds each (default 2 x 2)
# Everything ends up in $OUT/results.tgz.
# Usage on the GPU machine: BIN=.carry/fp8small17b OUT=$OUT bash .carry/fp8small17b/fp8small_run.sh
set -uo pipefail
BIN=${BIN:-build/cli}
OUT=${OUT:-fp8small_out}
HERE=$(dirname "$0")
PY=${PY:-$HERE/fp8_backend.py}
PAIRS=${PAIRS:-2}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=${PLAN_DATA_DIR:-$PWD/data} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
if ldd "$BIN/plan-gpu" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
ltver() {
  local p; p=$(ldd "$BIN/plan-gpu" | awk '/libcublasLt/ {print $3}')
  python3 -c "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).cublasLtGetVersion(), sys.argv[1])" "$p"
}
{
  echo "date: $(date -u +%FT%TZ)"
  echo "command: BIN=$BIN PAIRS=$PAIRS ROUNDS=$ROUNDS bash $0"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  echo "backend cuBLASLt: $(ltver)"
  ldd "$BIN/plan-gpu" | grep -E "cublas|nccl"
} > "$OUT/env.txt" 2>&1
grep -E "H200|H100|cuBLASLt|torch" "$OUT/env.txt"
t0=$(date +%s)
echo "== test_backend_gpu (PLAN_GPU_TEST_FP8_ONLY=1)"
PLAN_GPU_TEST_FP8_ONLY=1 timeout 60 "$BIN/test_backend_gpu" > "$OUT/test_backend_gpu.txt" 2>&1
echo "test_backend_gpu rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "FAIL|passed|FAILED|fp8 gemm 4096" "$OUT/test_backend_gpu.txt" | head -6
# the shapes below 0.97 in bench/results/fp8h200_2026-11-27/call3_h200 (toolkit library)
SHAPES="4096x768x4096 4096x4096x512 4096x4096x1024 4096x2560x8192 4096x1280x8192 4096x8192x1024 4096x6144x4096"
d="$OUT/probe"; mkdir -p "$d"
args=(); for s in $SHAPES; do args+=(--shape "$s"); done
CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$d/plan.log" timeout 30 "$BIN/plan" calibrate --ops gemm_fp8 \
  "${args[@]}" --repeats 1 -o "$d/plan.csv" > "$d/plan.txt" 2>&1
CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$d/torch.log" SHAPES="$SHAPES" timeout 60 python3 - > "$d/torch.txt" 2>&1 <<'PYEOF'
import ctypes, os, torch
for s in os.environ["SHAPES"].split():
    m, n, k = map(int, s.split("x"))
    x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    sa, sb = torch.ones((), device="cuda"), torch.ones((), device="cuda")
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=y)
    torch.cuda.synchronize()
    print(m, n, k, y.shape)
for line in open("/proc/self/maps"):
    if "libcublasLt" in line:
        p = line.split()[-1]
        print("torch's cublasLt", ctypes.CDLL(p).cublasLtGetVersion(), p)
        break
PYEOF
for f in "$d"/plan.log "$d"/torch.log; do
  echo "-- $(basename "$f")"
  grep 'cublasLtMatmul\]' "$f" | grep 8F_E4M3 | grep -o "Ddesc=\[type=R_16BF rows=[0-9]* cols=[0-9]*\|algo=\[[^]]*\]\|workSpaceSizeInBytes=[0-9]*" | paste - - - | sort | uniq -c
done
echo "probe ($(( $(date +%s) - t0 )) s)"
for p in $(seq 1 "$PAIRS"); do
  for mode in loop host-ahead; do
    c="$OUT/cmp_${mode}_p$p"; mkdir -p "$c"
    echo "== fp8_backend.py --timing $mode (pair $p)"
    timeout "${CMP_TIMEOUT:-60}" python3 "$PY" --bin "$BIN" --models 8b,70b --rounds "$ROUNDS" --group 6 \
      --no-bf16 --timing "$mode" --out "$c" > "$c/fp8_backend_log.txt" 2>&1
    echo "rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "^shapes|redone|Error|error" "$c/fp8_backend_log.txt" | tail -3
  done
done
tar czf /tmp/fp8small_results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/fp8small_results.tgz "$OUT/results.tgz"
