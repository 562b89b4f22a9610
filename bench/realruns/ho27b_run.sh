#!/bin/bash
# Device driver of the twenty-sixth session's held-out set (ho27b) on one 2 x H200 machine: the two
# single-GPU lanes (runs_ho27b_g0.txt on GPU 0, runs_ho27b_g1.txt on GPU 1) at the same time, then
# the two-GPU phase (runs_ho27b_x2.txt through bench/mgpu9_run.sh).
# Usage on the device (repository root): OUT=... bash bench/realruns/ho27b_run.sh [single|x2|all]
# (one device call may run 600 s: the lanes and the two-GPU phase go in two calls)
PHASE=${1:-all}
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
if [ $PHASE != x2 ]; then
nvidia-smi -L > $OUT/gpus.txt 2>&1
python3 -c 'import torch,transformers,sys;print("torch",torch.__version__,"transformers",transformers.__version__,"cuda",torch.version.cuda,"python",sys.version.split()[0])' >> $OUT/gpus.txt 2>&1
CUDA_VISIBLE_DEVICES=0 python3 bench/realruns/driver.py bench/realruns/runs_ho27b_g0.txt --out $OUT/g0 --deadline ${G_DEADLINE:-210} > $OUT/g0.txt 2>&1 &
CUDA_VISIBLE_DEVICES=1 DRIVER_PORT_BASE=29700 python3 bench/realruns/driver.py bench/realruns/runs_ho27b_g1.txt --out $OUT/g1 --deadline ${G_DEADLINE:-210} > $OUT/g1.txt 2>&1 &
wait
cat $OUT/g0.txt $OUT/g1.txt
# at most 8 files come back from the device: the single-GPU lanes in one pack
( cd $OUT && tar czf ho27b_single.tgz gpus.txt g0.txt g1.txt g0 g1 && rm -rf g0 g1 g0.txt g1.txt )
fi
[ $PHASE = single ] || C=. NAME=ho27bx2 JOBS=runs_ho27b_x2.txt OUT=$OUT bash bench/mgpu9_run.sh ${X2_DEADLINE:-420}
ls -la $OUT
