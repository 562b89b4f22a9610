#!/bin/bash
# cp14 (2026-11-28), one call on 2 x H200 (issue 19): Qwen3-1.7B ring CP 2 at seq 8192 with CUDA
# events around every ring call and SDPA call (bench/realruns/cp_ring_events.py) and host clock
# marks (--host-split); then the same model and tokens per GPU without the ring (FSDP2 over the
# same 2 ranks, seq 4096 each: --layout tp --tp 1), with the same events on the blocks.
# From the repository root of the lent machine: OUT=... bash .carry/cp14/bench/cp14_run.sh
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=${OUT:?}; C=.carry/cp14/bench/realruns
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv; nproc;
  lscpu | grep -i "model name"; python3 -c "import torch;print(torch.__version__,torch.version.cuda,torch.cuda.nccl.version())"; } > $W/machine.txt 2>&1
P=0; T0=$(date +%s); DEADLINE=${DEADLINE:-150}
run() {  # label timeout args...
  L=$1; T=$2; shift 2; P=$((P+1))
  el=$(( $(date +%s) - T0 )); [ $((el + T/2)) -gt $DEADLINE ] && { echo "skip $L at $el s" >> $W/driver.txt; return; }
  t0=$(date +%s.%N)
  CP_EVENTS_OUT=$W/ev_$L CUDA_VISIBLE_DEVICES=0,1 timeout $T torchrun --nproc_per_node 2 --master_port $((29600+P)) \
    $C/cp_ring_events.py "$@" --label $L --out $W/results.jsonl >> $W/log_$L.txt 2>&1
  echo "rc $? $L $(python3 -c "import time;print(round(time.time()-$t0,1))") s" >> $W/driver.txt
}
Q="--config qwen3-1.7b --mbs 1 --warmup 2 --steps 5 --host-split"
run cp2-q3-17b-s8k-ev 70 --layout cp --cp 2 --seq 8192 $Q
run dp2-q3-17b-s4k-ev 60 --layout tp --tp 1 --seq 4096 $Q
run cp2-q3-17b-s8k-ev2 60 --layout cp --cp 2 --seq 8192 $Q
grep -h "CPEV\|Error\|error" $W/log_*.txt | head -60
python3 - <<'PY'
import json, os
for l in open(os.path.join(os.environ["OUT"], "results.jsonl")):
    r = json.loads(l)
    print(r["label"], "steps", r.get("step_times_s"), "rank0", r.get("step_times_rank0_s"),
          "host0", r.get("host_issue_times_rank0_s"), r.get("error", "")[:300])
    print("  host_split", json.dumps(r.get("host_split"))[:1500])
PY
cat $W/driver.txt
