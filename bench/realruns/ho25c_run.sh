#!/bin/bash
# Device driver of ho25c (as ho25b_run.sh) on one 2 x H200 machine: two single-GPU lanes at once (distinct
# rendezvous ports), then the two-GPU phase through bench/mgpu9_run.sh.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi -L > $OUT/gpus.txt 2>&1
CUDA_VISIBLE_DEVICES=0 DRIVER_PORT_BASE=29600 python3 bench/realruns/driver.py bench/realruns/runs_ho25c_g0.txt --out $OUT/g0 --deadline 100 > $OUT/g0.txt 2>&1 &
CUDA_VISIBLE_DEVICES=1 DRIVER_PORT_BASE=29700 python3 bench/realruns/driver.py bench/realruns/runs_ho25c_g1.txt --out $OUT/g1 --deadline 100 > $OUT/g1.txt 2>&1 &
wait
cat $OUT/g0.txt $OUT/g1.txt
C=. NAME=ho25c OUT=$OUT JOBS=runs_ho25c_x2.txt bash bench/mgpu9_run.sh 160
