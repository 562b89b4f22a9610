#!/usr/bin/env bash
# backend_run.sh — everything issue 3 measures, in one call on a GPU machine, side by side on the
# same GPUs: the backend's GPU test, plan calibrate (CSV), plan measure of Llama-3.1-8B under
# FSDP2 on 4 GPUs, and the PyTorch references (torch.matmul, torch.distributed collectives, a real
# FSDP2 training step). Writes the logs under $OUT (or ./backend-run-out).
#
# Usage on the GPU machine, from the repository root, with the binaries built as
# backend/README.md says (BIN holds plan and test_backend_gpu):
#   BIN=.carry/bk bash bench/backend_run.sh                    # everything
#   BIN=.carry/bk PARTS="test gemm measure fsdp2" bash bench/backend_run.sh
# Parts: test calibrate measure gemm coll fsdp2 megatron.
set -uo pipefail
OUT=${OUT:-backend-run-out}
BIN=${BIN:-build/cli}
PARTS=" ${PARTS:-test calibrate measure gemm coll fsdp2 megatron} "
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PLAN_DATA_DIR=$PWD/data PYTHONUNBUFFERED=1
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
{ nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -6; ldd "$PLAN" | grep -E "cublas|nccl|not found"; } >>"$log" 2>&1
if has test; then
  say "test_backend_gpu"
  timeout 240 "$BIN/test_backend_gpu" >>"$log" 2>&1; echo "exit $?" >>"$log"
fi
if has calibrate; then
  say "plan calibrate"
  timeout 240 "$PLAN" calibrate --max-bytes ${MAX_BYTES:-1G} -o "$OUT/calibrate.csv" >>"$log" 2>"$OUT/calibrate.err"
  echo "exit $?" >>"$log"; tail -3 "$OUT/calibrate.err" >>"$log"
fi
if has gemm; then
  # 8192^3 bf16, interleaved rounds so that both see the same power and clock state: cold
  # (3 warm-up launches) and after 1 s of back-to-back launches (sustained, power-capped).
  for i in 1 2; do
    for w in 0 1000; do
      say "plan calibrate --shape 8192x8192x8192 --warmup-ms $w (round $i)"
      timeout 60 "$PLAN" calibrate --ops gemm --shape 8192x8192x8192 --warmup-ms $w -o "$OUT/gemm.csv" 2>/dev/null | grep "^8192x" >>"$log"
      say "torch.matmul --only square8192 --warmup-s $((w / 1000)) (round $i)"
      timeout 60 python3 bench/torch_gemm.py --only square8192 --warmup-s $((w / 1000)) 2>&1 | grep "^torch.matmul" >>"$log"
    done
  done
  say "plan calibrate --ops gemm (all shapes)"
  timeout 60 "$PLAN" calibrate --ops gemm -o "$OUT/gemm_shapes.csv" 2>/dev/null | grep -E "^(qkv|mlp_up).tp1 " >>"$log"
  say "torch.matmul (shapes)"
  timeout 60 python3 bench/torch_gemm.py 2>&1 | grep -E "mlp_up|qkv" >>"$log"
fi
if has measure; then
  say "plan measure 8b fsdp2 4 GPUs"
  M="measure --model 8b --system h200-x4 --framework fsdp2 --gpus 4 --gbs 4 --seq 4096"
  timeout 180 "$PLAN" $M >>"$log" 2>&1; echo "exit $?" >>"$log"
  timeout 180 "$PLAN" $M --format json >"$OUT/measure_fsdp2.json" 2>>"$log"; echo "exit $?" >>"$log"
fi
if has coll; then
  say "torch.distributed collectives"
  timeout 200 torchrun --nproc_per_node 4 bench/torch_coll.py >>"$log" 2>&1; echo "exit $?" >>"$log"
fi
if has fsdp2; then
  say "PyTorch FSDP2 step"
  timeout 300 torchrun --nproc_per_node 4 bench/fsdp2_step.py >>"$log" 2>&1; echo "exit $?" >>"$log"
fi
if has megatron; then
  say "plan measure megatron tp2 dp2 (second layout)"
  timeout 120 "$PLAN" measure --model 8b --system h200-x4 --gpus 4 --tp 2 --gbs 4 >>"$log" 2>&1; echo "exit $?" >>"$log"
fi
say "done"
