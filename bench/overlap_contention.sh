#!/usr/bin/env bash
# Runs bench/overlap_contention.py on the local GPUs (a device call: bash bench/overlap_contention.sh
# [RANKS...], default all GPUs) and keeps, per rank count N, its JSON, the table it prints and
# NCCL's INIT/TUNING log (the channel counts) in $OUT/ranksN.
set -euo pipefail
out=${OUT:-/tmp/contention}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$out/gpus.csv"
ranks=("$@")
[ ${#ranks[@]} -eq 0 ] && ranks=("$(nvidia-smi -L | wc -l)")
for n in "${ranks[@]}"; do
  d="$out/ranks$n"
  mkdir -p "$d"
  NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCL_DEBUG_FILE="$d/nccl.%h.%p.log" \
    torchrun --standalone --nproc_per_node "$n" bench/overlap_contention.py \
    -o "$d/contention.json" > "$d/table.txt" 2> "$d/stderr.txt"
  cat "$d/table.txt"
  cat "$d"/nccl.*.log | grep -E "channel\{Lo" | sed 's/.*INFO //' | sort | uniq -c | sort -rn | head -6 \
    > "$d/nccl_channels.txt" || true
  cat "$d/nccl_channels.txt"
done
