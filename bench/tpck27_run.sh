#!/bin/bash
# Device driver of branch tpck27 (bench/results/tpck27_2026-11-29/README.md): machine facts, then
# bench/tpck27_matched.py on 2 GPUs (none / full checkpoint / op SAC interleaved in one process,
# every rank's block clock, host probe every round, op counts), packed into $OUT/tpck27.tgz.
# Usage on the device (repository root): C=.carry/tpck27 bash .carry/tpck27/bench/tpck27_run.sh 170
set -u
C=${C:-.carry/tpck27}
DEADLINE=${1:-170}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/tpck27-work; rm -rf $W; mkdir -p $W/x2
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA"; nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,power.limit --format=csv; nvidia-smi topo -m; uptime
} > $W/x2/facts.txt 2>&1
timeout $((DEADLINE + 40)) torchrun --nproc_per_node 2 --master_port 29517 $C/bench/tpck27_matched.py \
  --case llama-3.1-8b:8:256x1,4096x2 --case smollm2-1.7b:24:8192x1 --case smollm2-1.7b:8:256x1 \
  --rounds 4 --per 2 --warmup 2 --deadline $DEADLINE --out $W/x2 > $W/x2/log.txt 2>&1
echo "rc $?" >> $W/x2/log.txt
uptime >> $W/x2/facts.txt
tail -5 $W/x2/log.txt
tar czf $OUT/tpck27.tgz -C /tmp tpck27-work
ls -la $OUT
