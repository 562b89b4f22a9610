#!/bin/bash
# meas13's one device call (2 x H200): 1) plan measure of every 2-GPU real run's layout
# (bench/meas10_run.sh over jobs.txt: mpirun -np 2, one process per GPU, 3 steps),
# 2) bench/realruns/gap_profile.py on GPU 0 (the H100 optimizer-host constants' method,
# bench/results/smallrows_2026-11-27), 3) what cuDNN the machine has. Everything into $OUT.
set -u
C=.carry/meas13
T0=$(date +%s)
mkdir -p $OUT/m
C=$C bash $C/meas10_run.sh $C/jobs.txt ${JOBS_DEADLINE:-110} 3
echo "jobs done +$(( $(date +%s) - T0 )) s" >> $OUT/log.txt
W=/tmp/meas13g; rm -rf $W; mkdir -p $W
{ nvidia-smi --query-gpu=name,uuid,memory.total,driver_version,clocks.max.sm,power.limit --format=csv;
  lscpu | head -20; python3 -c "import torch,transformers;print(torch.__version__,torch.version.cuda,torch.backends.cudnn.version(),transformers.__version__)";
  ls /usr/local/cuda/lib64 | grep -i cudnn; python3 -c "import nvidia.cudnn,os;p=os.path.dirname(nvidia.cudnn.__file__);print(p);print(os.listdir(p));print(os.listdir(os.path.join(p,'lib')))" ;
  ls $(python3 -c "import nvidia.cudnn,os;print(os.path.dirname(nvidia.cudnn.__file__))")/include 2>&1 | head; date -u; } > $W/machine.txt 2>&1
CUDA_VISIBLE_DEVICES=0 NCCL_NVLS_ENABLE=0 timeout ${GAP_TIMEOUT:-85} python3 bench/realruns/gap_profile.py --out $W/prof --runs smollm2-360m:2048:8,mixtral-8x7b:4096:1:2 > $W/prof.log 2>&1
echo "gap_profile rc $? +$(( $(date +%s) - T0 )) s" >> $W/prof.log
tar czf $OUT/gap.tgz -C $W .
tail -3 $W/prof.log | cut -c1-400; cat $OUT/log.txt
