#!/bin/bash
# cp23 device driver (one H200): bench/cp23_chunks.py, results under $OUT/r
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mkdir -p $OUT/r
{ date -u; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total,driver_version --format=csv; } > $OUT/r/smi.txt 2>&1
timeout 56 python3 .carry/cp23/cp23_chunks.py $OUT/r 44 2>&1 | grep -v -i warn | tail -40 > $OUT/r/log.txt
tail -25 $OUT/r/log.txt
