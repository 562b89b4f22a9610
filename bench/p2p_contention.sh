#!/usr/bin/env bash
# Runs bench/p2p_contention.py on 2 GPUs (a device call, from the folder holding bench/):
# NCCL channels as NCCL picks them, then capped at 2 (an IB peer's default share,
# NCCL_NCHANNELS_PER_NET_PEER=2), keeping each run's JSON, table and NCCL INIT log in $OUT.
set -uo pipefail
out=${OUT:-/tmp/p2p}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$out/gpus.csv"
run() {  # label, seconds, extra env...
  local l=$1 t=$2; shift 2
  env NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P NCCL_DEBUG_FILE="$out/nccl_$l.%h.%p.log" "$@" \
    timeout "$t" torchrun --standalone --nproc_per_node 2 bench/p2p_contention.py --label "$l" \
    -o "$out/p2p_$l.json" "${EXTRA[@]}" > "$out/table_$l.txt" 2> "$out/stderr_$l.txt"
  echo "rc=$? ($l)"; cat "$out/table_$l.txt"
}
EXTRA=()
run default 34
EXTRA=(--shapes 8192x14336x8192,8192x8192x2048,4096x16384x6656)
run ch2 22 NCCL_MAX_NCHANNELS=2 NCCL_MIN_NCHANNELS=2
grep -h "via P2P\|nChannels\|p2p channels\|P2P Chunksize" "$out"/nccl_*.log | sed 's/.*INFO //' | sort | uniq -c | sort -rn | head -12
