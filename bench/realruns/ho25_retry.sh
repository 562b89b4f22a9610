#!/bin/bash
# Second device call of ho25 (see runs_ho25_retry*.txt): the two lanes on distinct rendezvous ports.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
CUDA_VISIBLE_DEVICES=0 DRIVER_PORT_BASE=29600 python3 bench/realruns/driver.py bench/realruns/runs_ho25_retry.txt --out $OUT/r0 --deadline 150 > $OUT/r0.txt 2>&1 &
CUDA_VISIBLE_DEVICES=1 DRIVER_PORT_BASE=29700 python3 bench/realruns/driver.py bench/realruns/runs_ho25_retry_g1.txt --out $OUT/r1 --deadline 150 > $OUT/r1.txt 2>&1 &
wait
cat $OUT/r0.txt $OUT/r1.txt
C=. NAME=ho25x2r JOBS=runs_ho25_retry_x2.txt OUT=$OUT bash bench/mgpu9_run.sh 150
