#!/bin/bash
# moepub device run: build and run bench/moe_expert_gemm.cu on one H100
set -u
D=$(dirname "$0")
mkdir -p $OUT/r
{
date -u +%FT%TZ
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version,temperature.gpu --format=csv,noheader
nvcc --version | tail -2
python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda)" 2>/dev/null
} > $OUT/r/env.txt 2>&1
cat $OUT/r/env.txt
nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/moe_expert_gemm $D/moe_expert_gemm.cu -lcublasLt 2>&1 | tail -5
/tmp/moe_expert_gemm > $OUT/r/moe_expert_gemm.tsv 2> $OUT/r/moe_expert_gemm.err
echo rc=$? >> $OUT/r/env.txt
nvidia-smi --query-gpu=temperature.gpu,clocks.sm,power.draw --format=csv,noheader >> $OUT/r/env.txt
tar czf $OUT/r.tgz -C $OUT r
cat $OUT/r/moe_expert_gemm.err | tail -5
cat $OUT/r/moe_expert_gemm.tsv | grep -E "layer6|ref"
