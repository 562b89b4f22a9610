#!/usr/bin/env bash
# Runs bench/ncclwait_contention.py on 2 GPUs (one device call, from the folder holding bench/),
# once per NCCL channel setting, each in its own process (NCCL reads the variables at init),
# stopping once BUDGET_S seconds have passed. Results: $OUT/ncclwait.jsonl, log.txt,
# nccl_info.txt (NCCL's channel lines), versions.txt.
set -uo pipefail
out=${OUT:-/tmp/ncclwait}
mkdir -p "$out"
budget=${BUDGET_S:-70}
start=$SECONDS
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
} > "$out/versions.txt" 2>&1
for ch in default 2 8 16 4; do
  if (( SECONDS - start > budget )); then echo "skipped $ch (budget)" >> "$out/log.txt"; continue; fi
  envs=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_DEBUG_FILE=/tmp/nccl_$ch.%p.log)
  [[ $ch != default ]] && envs+=(NCCL_MAX_NCHANNELS=$ch NCCL_MIN_NCHANNELS=$ch)
  echo "### $ch at $((SECONDS - start)) s" >> "$out/log.txt"
  env "${envs[@]}" timeout -k 5 30 torchrun --standalone --nproc_per_node 2 \
    bench/ncclwait_contention.py --label "ch$ch" --repeats ${REPEATS:-11} -o "$out/ncclwait.jsonl" \
    >> "$out/log.txt" 2>&1
  echo "rc=$? ($ch) at $((SECONDS - start)) s" >> "$out/log.txt"
  grep -h "p2p channels\|P2P Chunksize\|NCCL version" /tmp/nccl_$ch.*.log | sed "s/^/$ch: /" | sort | uniq -c >> "$out/nccl_info.txt"
done
grep -v "^\[" "$out/log.txt" | grep -v "W1128\|warn" | head -400
