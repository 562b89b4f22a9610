#!/bin/bash
# epg27's one device call (2 x H200): two-GPU EP 2 grouped runs of OLMoE and Qwen3-30B-A3B cut to
# 4 layers (top-k with a profiled step on every rank and the routing counts dumped, and balanced
# routing), then the one-GPU torch._grouped_mm probe at the EP rows' shapes with balanced groups and
# with the groups the runs routed. Run from the repository root as
#   C=.carry/epg27 bash $C/device_run.sh      (C holds realruns/ = bench/realruns/*.py + configs)
set -u
C=${C:-.carry/epg27}
R=$C/realruns
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/epg27; rm -rf $W; mkdir -p $W/prof $W/counts
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)"; nvidia-smi -L
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"python",sys.version.split()[0])'
} > $W/facts.txt 2>&1
cat $W/facts.txt
run() { # label, extra args...
  local lab=$1; shift
  local t0=$(date +%s)
  timeout 90 torchrun --nproc_per_node 2 $R/parallel_run.py --layout ep --ep 2 --experts grouped \
    --seq 4096 --mbs 2 --warmup 3 --steps 6 --out $W/results.jsonl --label $lab "$@" > $W/$lab.log 2>&1
  echo "$lab rc $? $(( $(date +%s) - t0 )) s"; tail -2 $W/$lab.log
}
PRUN_COUNTS_OUT=$W/counts/epg27-ep2-grp-olmoeL4 run epg27-ep2-grp-olmoeL4-s4k-b2 --config olmoe-1b-7b --layers 4 --profile $W/prof/olmoe.json --profile-rank -1
run epg27-ep2-bal-olmoeL4-s4k-b2 --config olmoe-1b-7b --layers 4 --route balanced
PRUN_COUNTS_OUT=$W/counts/epg27-ep2-grp-q3moeL4 run epg27-ep2-grp-q3moeL4-s4k-b2 --config qwen3-30b-a3b --layers 4 --profile $W/prof/q3moe.json --profile-rank -1
t0=$(date +%s)
CUDA_VISIBLE_DEVICES=0 timeout 100 python3 $R/grouped_mm_probe.py --out $W/grouped_mm.jsonl --counts $W/counts --reps 15 > $W/probe.log 2>&1
echo "probe rc $? $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=index,power.draw,temperature.gpu --format=csv > $W/smi_after.txt 2>&1
tar czf $OUT/epg27.tgz -C /tmp epg27
ls -la $OUT; cat $W/probe.log
