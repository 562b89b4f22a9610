#!/bin/bash
# tpck14 call 2: the two ho13 TP-2 jobs exactly as ho13 ran them (no extra flags), on a fresh machine
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/tpck14b; rm -rf $W; mkdir -p $W
{ date -u; nvidia-smi -L; lscpu | grep -E "Model name|MHz"; python3 -c 'import time;t=time.perf_counter();s=0
for i in range(10**7): s+=i
print("python loop 1e7 s", round(time.perf_counter()-t,3))'; } > $W/facts.txt 2>&1
R=bench/realruns
job() { lab=$1; shift
  timeout 40 torchrun --nproc_per_node 2 --master_port $((29600+RANDOM%100)) $R/parallel_run.py --layout tp --tp 2 --warmup 3 --steps 6 --out $W/results.jsonl --label $lab "$@" > $W/$lab.log 2>&1; echo "$lab rc $?"; }
job rep1-ho13-tp2-ckpt-mis7bL8-s8k --ckpt --config mistral-7b-v0.3 --layers 8 --seq 8192 --mbs 1
job rep1-ho13-tp2-q3-8bL8-s4k-b2 --config qwen3-8b --layers 8 --seq 4096 --mbs 2
job rep2-ho13-tp2-ckpt-mis7bL8-s8k --ckpt --config mistral-7b-v0.3 --layers 8 --seq 8192 --mbs 1
cat $W/facts.txt
cd /tmp && tar czf $OUT/tpck14b.tgz tpck14b
grep -h -o '"label": "[^"]*"\|"step_s_median": [0-9.]*' $W/results.jsonl
