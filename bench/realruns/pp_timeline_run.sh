#!/bin/bash
# Per-rank timelines of torch.distributed.pipelining steps (bench/realruns/parallel_run.py
# --timeline) on one 4-GPU host: where the 1F1B and interleaved steps spend their time, to test the
# pipeline formula (costmodel/estimate.c fill bubble) with measured per-stage times
# (bench/realruns/pp_timeline.py). Run from the repository root on the GPU machine:
#   OUT=... bash bench/realruns/pp_timeline_run.sh
set -u
export NCCL_NVLS_ENABLE=0
R=$OUT/results.jsonl
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv > $OUT/smi.txt 2>&1
lscpu | grep -i 'model name' >> $OUT/smi.txt
run() { L=$1; shift; timeout 240 torchrun --nproc_per_node 4 bench/realruns/parallel_run.py --layout pp --pp 4 \
        --config llama-3.1-8b --layers 16 --seq 4096 --mbs 1 --warmup 2 --steps 5 --timeline \
        --out $R --label $L "$@" > $OUT/log-$L.txt 2>&1 || echo "failed: $*" >> $OUT/failed.txt; }
run pp4-1f1b-8bL16-tl --microbatches 8
run pp4v2-int-8bL16-tl --microbatches 8 --vpp 2
run pp4-1f1b-8bL16-m16-tl --microbatches 16
run pp4-1f1b-8bL16-m4-tl --microbatches 4
cd $OUT && tar czf logs.tgz log-*.txt && rm -f log-*.txt
