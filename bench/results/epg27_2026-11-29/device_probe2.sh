#!/bin/bash
# epg27 device call 2 (one H200 of the 2 x H200 lease): torch._grouped_mm at the EP rows' shapes,
# balanced against the groups of every layer of the last timed step of call 1's runs
set -u
C=${C:-.carry/epg27}
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/smi_before.txt 2>&1
CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 timeout 150 python3 $C/realruns/grouped_mm_probe.py --out $OUT/grouped_mm_layers.jsonl \
  --counts $C/counts --reps 15 --real-calls 4 --last-calls --all-profiles --shapes olmoe-ep4,olmoe-ep2,q3moe-ep2,q3moe-ep4 2>&1 | tee $OUT/probe2.log
echo "rc ${PIPESTATUS[0]}"
