#!/bin/bash
# call 1: environment, TE-like cuBLASLt host cost, MCore MoE layer host cost grid
set -x
D=$OUT/mcoremoe_host; mkdir -p $D
C=.carry/mcoremoe
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; lscpu | head -20;
  python3 -c "import torch;print(torch.__version__, torch.version.cuda)"; nvcc --version | tail -2; } > $D/env.txt 2>&1
(cd $C && timeout 60 nvcc -O2 -o /tmp/te_gemm_host te_gemm_host.cu -lcublasLt) > $D/nvcc.txt 2>&1
for s in "128 128 128" "256 512 1024"; do CUDA_VISIBLE_DEVICES=0 timeout 40 /tmp/te_gemm_host $s; done > $D/te_gemm_host.txt 2>&1
cat $D/te_gemm_host.txt
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=2
timeout 400 torchrun --nproc-per-node 4 $C/mcore_moe_host.py --mlm .carry/bridgerun/mlm --out $D > $D/log.txt 2>&1
tail -60 $D/log.txt
cd $OUT && tar czf mcoremoe_host.tgz mcoremoe_host
