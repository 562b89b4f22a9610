#!/bin/bash
# fp8run19's follow-up device call, NOT RUN YET (bench/results/fp8run19_2026-11-29/README.md,
# "What settles it"): (1) torchao's compiled float8 casts timed one by one on the H200
# (bench/fp8_rowwise_quant.py, plain torch: isolates the cast rate the rowwise run points at),
# (2) the FP8 runs of bench/realruns/runs_fp8run19b.txt (torchao from the carried source).
# From a carry folder holding ao.tgz (git archive v0.18.0 torchao of pytorch/ao, csrc left out)
# and bench/{fp8_rowwise_quant.py,realruns/{realrun,driver,native_llama,sac_policy}.py,
# realruns/configs,realruns/runs_fp8run19b.txt}:   OUT=$OUT bash bench/fp8run19b_run.sh
# About 60 s for (1) and 35-45 s a run for (2) after the cold start.
set -o pipefail
: "${OUT:?set OUT}"
mkdir -p /tmp/ao && tar -xzf ao.tgz -C /tmp || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/nvidia-smi.txt"
timeout 120 python3 bench/fp8_rowwise_quant.py --reps 20 --out "$OUT/quant_h200.json" 2>&1 | tee "$OUT/quant_h200.log"
export PYTHONPATH=/tmp/ao FP8_TORCHAO_REF="torchao v0.18.0 source (5f2baf9), carried" \
       TORCHAO_FORCE_SKIP_LOADING_SO_FILES=1
python3 bench/realruns/driver.py bench/realruns/runs_fp8run19b.txt --out "$OUT" --deadline "${DEADLINE:-420}"
