#!/bin/bash
# Device driver of helper cg11 (CUDA graphs under torchtitan's core Trainer, issue 19): eager vs
# --cuda-graph steps of bench/realruns/realrun.py --impl native --fsdp-reshard default.
# Phase A, one GPU each (two chains side by side on GPUs 0 and 1): SmolLM2-360M seq 2048 mbs 8
# and Llama-3.2-1B seq 2048 mbs 2 on GPU 0, Qwen3-1.7B seq 4096 mbs 1 on GPU 1. Phase B: Llama-3.2-1B
# seq 2048 mbs 2 on 4 ranks (torchrun, FSDP2 over 4), eager vs graphed, while time is left.
# Usage on the device (repository root): C=.carry/cg11 bash .carry/cg11/cg11_run.sh DEADLINE_S
set -u
C=${C:-.carry/cg11}
DEADLINE=${1:-100}
T0=$(date +%s)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
W=/tmp/cg11-work; rm -rf $W; mkdir -p $W
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)"; nvidia-smi -L
  nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv
  python3 -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"python",sys.version.split()[0])'
} > $W/facts.txt 2>&1
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
R="python3 $C/realrun.py --impl native --fsdp-reshard default --warmup 3 --steps 6"
one() { # gpu label args...
  local g=$1 lab=$2; shift 2
  local l=$(left); [ $l -lt 12 ] && { echo "skip $lab ($l s left)" >> $W/log.txt; return; }
  CUDA_VISIBLE_DEVICES=$g MASTER_PORT=$((29600 + g)) timeout $((l - 3)) $R --label $lab --out $W/results.jsonl "$@" > $W/$lab.log 2>&1
  echo "$lab rc $? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
}
( one 0 smollm2-e --config smollm2-360m --seq 2048 --mbs 8
  one 0 smollm2-g --config smollm2-360m --seq 2048 --mbs 8 --cuda-graph
  one 0 llama1b-e --config llama-3.2-1b --seq 2048 --mbs 2
  one 0 llama1b-g --config llama-3.2-1b --seq 2048 --mbs 2 --cuda-graph ) &
( one 1 qwen17-g --config qwen3-1.7b --seq 4096 --mbs 1 --cuda-graph
  one 1 qwen17-e --config qwen3-1.7b --seq 4096 --mbs 1 ) &
wait
for mode in e g; do
  l=$(left); [ $l -lt 22 ] && { echo "skip 4-rank $mode ($l s left)" >> $W/log.txt; continue; }
  extra=""; [ $mode = g ] && extra="--cuda-graph"
  timeout $((l - 3)) torchrun --nproc_per_node 4 --master_port 29650 $C/realrun.py --impl native \
    --fsdp-reshard default --warmup 3 --steps 6 --config llama-3.2-1b --seq 2048 --mbs 2 $extra \
    --label llama1b-dp4-$mode --out $W/results.jsonl > $W/llama1b-dp4-$mode.log 2>&1
  echo "llama1b-dp4-$mode rc $? at $(( $(date +%s) - T0 )) s" >> $W/log.txt
done
cat $W/log.txt
tar czf $OUT/cg11.tgz -C /tmp cg11-work
