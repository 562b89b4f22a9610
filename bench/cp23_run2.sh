#!/bin/bash
# cp23 device driver, call 2 (one H200): bench/cp23_chunks.py stage C only, results under $OUT/r
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mkdir -p $OUT/r
timeout 30 python3 .carry/cp23/cp23_chunks.py $OUT/r 24 C 2>&1 | grep -v -i warn | tail -40 > $OUT/r/log.txt
tail -12 $OUT/r/log.txt | cut -c1-1500
