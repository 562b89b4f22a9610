#!/bin/bash
# moe25's one device call: the two-GPU Phi-3.5-MoE L4 row profiled (hfmoe24_probe.py under torchrun)
# and the EP 2 per-expert-loop row of Qwen3-235B-A22B's layer profiled (parallel_run.py --profile).
export NCCL_NVLS_ENABLE=0
mkdir -p $OUT/phimoe $OUT/ep
date -u > $OUT/facts.txt; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv >> $OUT/facts.txt
nproc >> $OUT/facts.txt; lscpu | grep "Model name" >> $OUT/facts.txt
t0=$(date +%s)
timeout 45 torchrun --nproc_per_node 2 --master_port 29711 .carry/moe25/hfmoe24_probe.py --out $OUT/phimoe \
  --realruns bench/realruns --runs phi-3.5-moe:4096:2:4 --steps 4 \
  --copy models/phimoe/modeling_phimoe.py,integrations/moe.py > $OUT/phimoe/log.txt 2>&1
t1=$(date +%s)
timeout 45 torchrun --nproc_per_node 2 --master_port 29712 bench/realruns/parallel_run.py --layout ep --ep 2 \
  --experts loop --config qwen3-235b-a22b --layers 2 --seq 2048 --mbs 2 --warmup 3 --steps 4 \
  --out $OUT/ep/results.jsonl --label moe25-ep2-loop-q3-235bL2-s2k-b2 --profile $OUT/ep/ep2-loop.json > $OUT/ep/log.txt 2>&1
t2=$(date +%s)
echo "phimoe_s $((t1-t0)) ep_s $((t2-t1))" >> $OUT/facts.txt
tail -3 $OUT/phimoe/log.txt $OUT/ep/log.txt | cut -c1-300
ls -la $OUT/*
