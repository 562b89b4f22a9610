#!/bin/bash
# The expert-parallel profile call (bench/results/ep_2026-11-27/README.md): on a 2-GPU machine,
# repository root, results under $OUT. Re-runs the ep2 grouped-GEMM row of
# bench/results/mgpu_2026-11-27 (same flags, 2 GPUs) with one extra torch.profiler step, the same
# with balanced routing (no split-size sync), then the one-GPU micro-measurements.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/ep_out}
mkdir -p "$OUT"
{
  date -u; nvidia-smi; nvidia-smi topo -m
  python3 -c 'import torch,sys; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.device_count())'
} > "$OUT/facts.txt" 2>&1
R=bench/realruns/parallel_run.py
COMMON="--layout ep --ep 2 --experts grouped --config qwen3-30b-a3b --layers 4 --seq 4096 --mbs 1 --warmup 2 --steps ${STEPS:-7} --out $OUT/results.jsonl"
timeout 150 torchrun --nproc_per_node 2 --master_port 29511 $R $COMMON --label ep2-grp-q3moeL4 \
  --profile "$OUT/prof-ep2-topk.json" 2>&1 | tee "$OUT/log.txt"
timeout 150 torchrun --nproc_per_node 2 --master_port 29512 $R $COMMON --label ep2-grp-bal-q3moeL4 \
  --route balanced --profile "$OUT/prof-ep2-bal.json" 2>&1 | tee -a "$OUT/log.txt"
timeout 120 python3 bench/realruns/ep_micro.py --out "$OUT/ep_micro.json" 2>&1 | tail -5 | tee -a "$OUT/log.txt"
cd "$OUT" && tar czf traces.tgz prof-*.trace.json.gz && rm -f prof-*.trace.json.gz
ls -la "$OUT"
