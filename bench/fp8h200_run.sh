#!/usr/bin/env bash
# fp8h200_run.sh — issue 16's FP8 backend against torch._scaled_mm on one H200, in one device
# call (bench/results/fp8h200_2026-11-27/): the FP8 parts of the GPU test, the cuBLASLt version of
# each library, a cuBLASLt trace of the FP8 GEMMs at the shapes that ran below 0.97x on H200 (which
# kernel and workspace each caller passes, on each library), and the comparison
# (bench/fp8_backend.py --group, per-tensor and blockwise) in one or more configurations.
#   PARTS    any of: test probe cmp (default all)
#   CONFIGS  for cmp, one fp8_backend.py run per LIB:WS:MODELS:BLK: LIB "system" (the CUDA
#            toolkit's cuBLASLt, what plan-gpu links) or "torch" (the cuBLASLt of PyTorch's wheel,
#            by LD_LIBRARY_PATH, so both sides run one library); WS the backend's FP8 workspace
#            in KiB (PLAN_LT_FP8_WORKSPACE_KIB; 1024 = torch's default, the backend's now; 32768 =
#            the 32 MiB the backend offered before); MODELS the --models list; BLK 1 adds
#            --blockwise. Default "system:1024:8b,70b:1 torch:1024:8b,70b:1".
#   ROUNDS   rounds of fp8_backend.py (default 2); GROUP shapes per interleaved group (default 6);
#            CMP_TIMEOUT seconds per configuration (default 90); EXTRA more fp8_backend.py
#            arguments (e.g. "--warmup-ms 100")
# Everything ends up in $OUT/results.tgz (the device tool brings back few files).
# Usage on the GPU machine: BIN=.carry/fp8h200 OUT=$OUT bash .carry/fp8h200/fp8h200_run.sh
set -uo pipefail
BIN=${BIN:-build/cli}
OUT=${OUT:-fp8h200_out}
HERE=$(dirname "$0")
PY=${PY:-$HERE/fp8_backend.py}
PARTS=${PARTS:-test probe cmp}
CONFIGS=${CONFIGS:-system:1024:8b,70b:1 torch:1024:8b,70b:1}
ROUNDS=${ROUNDS:-2}
GROUP=${GROUP:-6}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=${PLAN_DATA_DIR:-$PWD/data} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
if ldd "$BIN/plan-gpu" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
TORCH_LIB=$(python3 -c "import os, nvidia; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'lib'))" 2>/dev/null)
[ -f "$TORCH_LIB/libcublasLt.so.13" ] || TORCH_LIB=$(dirname "$(find / -name 'libcublasLt.so.13' -path '*site-packages*' 2>/dev/null | head -1)")
# cublasLtGetVersion of the library a binary resolves (ldd) under the current LD_LIBRARY_PATH
ltver() {
  local p; p=$(ldd "$BIN/plan-gpu" | awk '/libcublasLt/ {print $3}')
  python3 -c "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).cublasLtGetVersion(), sys.argv[1])" "$p"
}
{
  echo "date: $(date -u +%FT%TZ)"
  echo "command: BIN=$BIN PARTS=\"$PARTS\" CONFIGS=\"$CONFIGS\" ROUNDS=$ROUNDS GROUP=$GROUP EXTRA=\"${EXTRA:-}\" bash $0"
  echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  echo "torch's CUDA libraries: $TORCH_LIB"
  echo "backend cuBLASLt (toolkit): $(ltver)"
  echo "backend cuBLASLt (torch's, LD_LIBRARY_PATH): $(LD_LIBRARY_PATH=$TORCH_LIB:${LD_LIBRARY_PATH:-} ltver)"
  echo "ldd plan-gpu:"; ldd "$BIN/plan-gpu"
} > "$OUT/env.txt" 2>&1
grep -E "H200|H100|cuBLASLt" "$OUT/env.txt"
t0=$(date +%s)
case " $PARTS " in *" test "*)
  echo "== test_backend_gpu (PLAN_GPU_TEST_FP8_ONLY=1)"
  PLAN_GPU_TEST_FP8_ONLY=1 timeout 60 "$BIN/test_backend_gpu" > "$OUT/test_backend_gpu.txt" 2>&1
  echo "test_backend_gpu rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "fp8|FAIL|passed|FAILED" "$OUT/test_backend_gpu.txt" | head -12;;
esac
case " $PARTS " in *" probe "*)
  # cuBLASLt trace (level 2: each launching call with its descriptors, algorithm and workspace)
  # of the FP8 GEMMs 4096x4096x3584 (8b mlp_down.tp4), 4096x1536x4096 (qkv.tp4) and
  # 4096x4096x1024 (attn_out.tp4), the three lowest on H200 in run 4, from each caller on each
  # library, and the backend with the 32 MiB workspace it offered before
  echo "== cuBLASLt traces"
  d="$OUT/probe"; mkdir -p "$d"
  for lib in system torch; do
    (
      [ "$lib" = torch ] && export LD_LIBRARY_PATH="$TORCH_LIB:${LD_LIBRARY_PATH:-}"
      for ws in 1024 32768; do
        PLAN_LT_FP8_WORKSPACE_KIB=$ws CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$d/plan_${lib}_ws$ws.log" timeout 30 \
          "$BIN/plan" calibrate --ops gemm_fp8 --shape 4096x4096x3584 --shape 4096x1536x4096 --shape 4096x4096x1024 \
          --repeats 1 -o "$d/plan_${lib}_ws$ws.csv" > "$d/plan_${lib}_ws$ws.txt" 2>&1
      done
      if [ "$lib" = system ]; then  # torch on the toolkit's library: preload it ahead of the wheel's
        pre=$(ldd "$BIN/plan-gpu" | awk '/libcublasLt/ {print $3}'):$(ldd "$BIN/plan-gpu" | awk '/libcublas\.so/ {print $3}')
      else pre=""; fi
      LD_PRELOAD=$pre CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$d/torch_${lib}.log" timeout 60 python3 - > "$d/torch_${lib}.txt" 2>&1 <<'EOF'
import ctypes, torch
for m, n, k in [(4096, 4096, 3584), (4096, 1536, 4096), (4096, 4096, 1024)]:
    x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    sa, sb = torch.ones((), device="cuda"), torch.ones((), device="cuda")
    y = torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    print(m, n, k, y.shape)
for line in open("/proc/self/maps"):
    if "libcublasLt" in line:
        p = line.split()[-1]
        print("torch's cublasLt", ctypes.CDLL(p).cublasLtGetVersion(), p)
        break
EOF
    )
  done
  for f in "$d"/*.log; do
    echo "-- $(basename "$f"): $(grep -c 'cublasLtMatmul\]' "$f") matmul lines"
    grep 'cublasLtMatmul\]' "$f" | grep 8F_E4M3 | grep -o "Ddesc=\[type=R_16BF rows=[0-9]* cols=[0-9]*\|algo=\[[^]]*\]\|workSpaceSizeInBytes=[0-9]*" | paste - - - | sort | uniq -c | head -6
  done
  grep -h "torch's cublasLt" "$d"/torch_*.txt
  echo "probe ($(( $(date +%s) - t0 )) s)";;
esac
case " $PARTS " in *" cmp "*)
  for cfg in $CONFIGS; do
    IFS=: read -r lib ws models blk <<< "$cfg"
    d="$OUT/cmp_${lib}_ws${ws}_$(echo "$models" | tr ',' '-')_blk${blk}${TAG:-}"; mkdir -p "$d"
    (
      [ "$lib" = torch ] && export LD_LIBRARY_PATH="$TORCH_LIB:${LD_LIBRARY_PATH:-}"
      export PLAN_LT_FP8_WORKSPACE_KIB=$ws
      { ldd "$BIN/plan-gpu" | grep cublas; echo "cublasLtGetVersion: $(ltver)"; } > "$d/plan_cublas_libs.txt"
      extra=""; [ "$blk" = 1 ] && extra="--blockwise"
      echo "== fp8_backend.py, $lib cuBLASLt ($(ltver)), FP8 workspace $ws KiB, models $models $extra"
      timeout "${CMP_TIMEOUT:-90}" python3 "$PY" --bin "$BIN" --models "$models" --rounds "$ROUNDS" \
        --group "$GROUP" --out "$d" $extra ${EXTRA:-} > "$d/fp8_backend_log.txt" 2>&1
      echo "rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "^shapes|^blockwise through|refused|Error|error" "$d/fp8_backend_log.txt" | head -5
    )
  done;;
esac
tar czf /tmp/fp8h200_results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/fp8h200_results.tgz "$OUT/results.tgz"
