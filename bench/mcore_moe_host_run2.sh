#!/bin/bash
D=$OUT/mcoremoe_sync; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name --format=csv; } > $D/env.txt
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=2
timeout 300 torchrun --nproc-per-node 4 .carry/mcoremoe/mcore_moe_sync_check.py --mlm .carry/bridgerun/mlm --out $D > $D/log.txt 2>&1
grep -v -i "warn" $D/log.txt | tail -40
