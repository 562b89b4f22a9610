#!/bin/bash
# tt10's one device call (issue 19, 2026-11-28): the SP chunk-cat copies of torch's functional
# collectives (bench/tp_chunk_cat.py) and one compiled torchtitan-style TP 4 step at batch 1
# (bench/realruns/parallel_run.py --profile) beside mgpu9's batch-6 step of the same model.
# Usage (repository root of the carried copy): C=.carry/tt10 OUT=$OUT bash .carry/tt10/bench/tt10_run.sh
set -u
R=$OUT/tt10; mkdir -p $R/prof
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader;
  python3 -c 'import torch,sys;print(torch.__version__,torch.version.cuda,torch.cuda.nccl.version(),sys.version.split()[0])';
  lscpu | grep -m1 "Model name"; } > $R/facts.txt 2>&1
timeout 200 torchrun --nproc_per_node 4 --master_port 29611 $C/bench/tp_chunk_cat.py --out $R --batches 1,6 \
  > $R/tp_chunk_cat.log 2>&1; echo "tp_chunk_cat rc $?" >> $R/facts.txt
timeout 110 torchrun --nproc_per_node 4 --master_port 29612 $C/bench/realruns/parallel_run.py --layout tp --tp 4 \
  --compile --config llama-3.1-8b --layers 4 --seq 8192 --mbs 1 --warmup 3 --steps 6 \
  --profile $R/prof/tp4cmp-b1.json --out $R/results.jsonl --label tt10-tp4-l8bL4-s8k-b1-cmp \
  > $R/tp4cmp-b1.log 2>&1; echo "tp4cmp-b1 rc $?" >> $R/facts.txt
tar czf $OUT/tt10.tgz -C $OUT tt10
tail -30 $R/tp_chunk_cat.log; cat $R/facts.txt; tail -3 $R/tp4cmp-b1.log
