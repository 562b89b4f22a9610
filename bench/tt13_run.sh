#!/bin/bash
# tt13 (2026-11-28), one call on 2 x H200: (1) the 2-GPU smoke rows of the 41-run table
# (bench/realruns/runs_mgpu_smoke2.txt: s2-tp2, s2-cp2, s2-pp2, s2-pp2v2) re-run with the same
# flags but 8 timed steps after the same single warm-up, so the first two timed steps are the
# smoke protocol's and the rest show the steady state; (2) Qwen3-1.7B ring CP 2 at seq 8192 (the
# tokens per GPU of the held-out cp4-q3-17b-s16k row), profiled; (3) s2-tp2 with host clock marks.
# From the repository root of the lent machine: OUT=... bash .carry/tt13/run.sh
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=${OUT:?}
mkdir -p $W/prof
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv; nproc;
  lscpu | grep -i "model name"; python3 -c "import torch;print(torch.__version__,torch.version.cuda,torch.cuda.nccl.version())"; } > $W/machine.txt 2>&1
P=0
T0=$(date +%s); DEADLINE=${DEADLINE:-170}
run() {  # label timeout args... (skipped when the call's DEADLINE would be passed)
  L=$1; T=$2; shift 2; P=$((P+1))
  el=$(( $(date +%s) - T0 )); [ $((el + T/2)) -gt $DEADLINE ] && { echo "skip $L at $el s" >> $W/driver.txt; return; }
  t0=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=0,1 timeout $T torchrun --nproc_per_node 2 --master_port $((29600+P)) \
    bench/realruns/parallel_run.py "$@" --label $L --out $W/results.jsonl >> $W/log_$L.txt 2>&1
  echo "rc $? $L $(python3 -c "import time;print(round(time.time()-$t0,1))") s" >> $W/driver.txt
}
S="--config llama-3.1-8b --warmup 1 --steps 8"
run s2x-tp2   60 --layout tp --tp 2 --layers 2 --seq 1024 $S
run s2x-cp2   60 --layout cp --cp 2 --layers 2 --seq 2048 $S
run s2x-pp2   60 --layout pp --pp 2 --microbatches 4 --layers 2 --seq 1024 $S
run s2x-pp2v2 60 --layout pp --pp 2 --vpp 2 --microbatches 4 --layers 4 --seq 1024 $S
run cp2-q3-17b-s8k 90 --layout cp --cp 2 --config qwen3-1.7b --seq 8192 --mbs 1 --warmup 2 --steps 5 --profile $W/prof/cp2-q3-17b-s8k.json
run s2x-tp2-hs 60 --layout tp --tp 2 --layers 2 --seq 1024 --config llama-3.1-8b --warmup 3 --steps 6 --host-split --profile $W/prof/s2x-tp2-hs.json
el=$(( $(date +%s) - T0 ))
if [ $((el + 25)) -le $DEADLINE ]; then  # eager FSDP2 Llama-3.2-1B at 2 ranks (cg11 measured 1 and 4 ranks)
  CUDA_VISIBLE_DEVICES=0,1 timeout 45 torchrun --nproc_per_node 2 --master_port 29690 bench/realruns/realrun.py \
    --impl native --fsdp-reshard default --warmup 3 --steps 6 --config llama-3.2-1b --seq 2048 --mbs 2 \
    --label llama1b-dp2-e --out $W/results.jsonl > $W/log_llama1b-dp2-e.txt 2>&1
  echo "rc $? llama1b-dp2-e" >> $W/driver.txt
else echo "skip llama1b-dp2-e at $el s" >> $W/driver.txt; fi
python3 - <<'PY'
import json, os
for l in open(os.path.join(os.environ["OUT"], "results.jsonl")):
    r = json.loads(l)
    print(r["label"], "max-over-ranks", r.get("step_times_s"), "rank0", r.get("step_times_rank0_s"),
          "warm", r.get("warmup_times_s"), "host0", r.get("host_issue_times_rank0_s"), r.get("error", "")[:200])
PY
cat $W/driver.txt
