#!/bin/bash
# tpck14 device driver: the ho13 TP-2 Mistral-7B L8 layout with/without --ckpt at seq 8k and 4k,
# each with a profiled step and host-split stamps; traces summarized on the machine.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/tpck14; rm -rf $W; mkdir -p $W/prof
{ date -u; nvidia-smi -L; python3 -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"python",sys.version.split()[0])'; } > $W/facts.txt 2>&1
R=bench/realruns
P=29511
job() { lab=$1; shift; P=$((P+1))
  timeout 75 torchrun --nproc_per_node 2 --master_port $P $R/parallel_run.py --layout tp --tp 2 --config mistral-7b-v0.3 --layers 8 --mbs 1 --warmup 3 --steps 6 --host-split --profile $W/prof/$lab.json --out $W/results.jsonl --label $lab "$@" > $W/$lab.log 2>&1
  echo "$lab rc $?"; }
job tpck-s8k-ckpt --seq 8192 --ckpt
job tpck-s8k-nockpt --seq 8192
job tpck-s4k-ckpt --seq 4096 --ckpt
job tpck-s4k-nockpt --seq 4096
for t in $W/prof/*.trace.json.gz; do timeout 40 python3 $R/trace_ops.py "$t" > "${t%.trace.json.gz}.ops.json" 2>/dev/null; done
cd /tmp && tar czf $OUT/tpck14.tgz tpck14/facts.txt tpck14/results.jsonl tpck14/*.log tpck14/prof/*.json
tar cf $OUT/traces.tar -C $W/prof $(cd $W/prof && ls *.trace.json.gz)
ls -la $OUT; grep -h -o '"label": "[^"]*"\|"step_s_median": [0-9.]*' $W/results.jsonl
