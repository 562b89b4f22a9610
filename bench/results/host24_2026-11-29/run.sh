#!/bin/bash
# host24's one device call: host24_probe.py in four fresh processes (issue 14)
export NCCL_NVLS_ENABLE=0 PYTHONPATH=bench/realruns
S=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
(lscpu | head -25; cat /proc/loadavg; nproc) > $OUT/host.txt 2>&1
i=0
for spec in "llama-3.2-1b 2048 2 sdpa" "smollm2-360m 2048 8 sdpa" "qwen3-1.7b 2048 2 eager" "llama-3.2-1b 2048 2 sdpa"; do
  set -- $spec; i=$((i+1))
  [ $((SECONDS-S)) -lt 80 ] || { echo "skip $i $spec (t=$((SECONDS-S)))"; continue; }
  timeout 45 python3 .carry/host24/host24_probe.py --out $OUT/p$i-$1-s$2-b$3-$4.json --model $1 --seq $2 --mbs $3 --attn $4 --steps 6 --port $((29540+i)) > $OUT/log$i.txt 2>&1
  echo "p$i $spec rc=$? t=$((SECONDS-S))"; grep -E "^(real|floor|floor_busy|real2|done) " $OUT/log$i.txt | cut -c1-400; tail -2 $OUT/log$i.txt | grep -i error
done
