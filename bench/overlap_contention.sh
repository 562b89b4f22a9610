#!/usr/bin/env bash
# Runs bench/overlap_contention.py on the local GPUs (a device call: bash bench/overlap_contention.sh)
# and keeps its JSON, the table it prints and NCCL's INIT/TUNING log (the channel counts) in $OUT.
set -euo pipefail
out=${OUT:-/tmp/contention}
mkdir -p "$out"
n=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$out/gpus.csv"
NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
  torchrun --standalone --nproc_per_node "$n" bench/overlap_contention.py \
  -o "$out/contention.json" 2> "$out/nccl.log" | tee "$out/table.txt"
grep -iE "nchannels|channel|Algo" "$out/nccl.log" | head -40 || true
