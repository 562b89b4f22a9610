#!/bin/bash
# cp16 (2026-11-28), one call on 2 x H200 (issue 19): both ranks' host and GPU timelines on one
# clock (bench/realruns/cp_ring_events.py with CP_EVENTS_TIMELINE=1, cp_timeline.py) for
# Qwen3-1.7B ring CP 2 at seq 8192, the same model without the ring at 2 ranks and at 1 rank (FSDP2,
# seq 4096 a GPU: the multi-rank host question on one host), and CP 2 again with Python's
# garbage collector off (torchtitan's trainer setting). Also torch 2.11's source of the ring's
# waits and FSDP2's unshard waits (src.txt).
# From the repository root of the lent machine: OUT=... bash .carry/cp16/bench/cp16_run.sh
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=${OUT:?}; C=.carry/cp16/bench/realruns; T=/tmp/cp16; mkdir -p $T
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv; nproc;
  lscpu | grep -i "model name"; python3 -c "import torch;print(torch.__version__,torch.version.cuda,torch.cuda.nccl.version())"; } > $W/machine.txt 2>&1
P=0; T0=$(date +%s); DEADLINE=${DEADLINE:-115}
run() {  # label timeout nproc env args...
  L=$1; TO=$2; N=$3; E=$4; shift 4; P=$((P+1))
  el=$(( $(date +%s) - T0 )); [ $((el + 24)) -gt $DEADLINE ] && { echo "skip $L at $el s" >> $W/driver.txt; return; }
  t0=$(date +%s.%N)
  env $E CP_EVENTS_TIMELINE=1 CP_EVENTS_OUT=$T/ev_$L CUDA_VISIBLE_DEVICES=0,1 timeout $TO torchrun --nproc_per_node $N --master_port $((29800+P)) \
    $C/cp_ring_events.py "$@" --label $L --out $W/results.jsonl >> $T/log_$L.txt 2>&1
  echo "rc $? $L $(python3 -c "import time;print(round(time.time()-$t0,1))") s" >> $W/driver.txt
}
Q="--config qwen3-1.7b --mbs 1 --warmup 2 --steps 8 --host-split"
run cp2-tl 40 2 X=1 --layout cp --cp 2 --seq 8192 $Q
run dp2-tl 35 2 X=1 --layout tp --tp 1 --seq 4096 $Q
run dp1-tl 35 1 X=1 --layout tp --tp 1 --seq 4096 $Q
run cp2-tl-gcoff 40 2 CP_EVENTS_GC=off --layout cp --cp 2 --seq 8192 $Q
python3 - > $W/src.txt 2>&1 <<'PY'
import inspect, torch
import torch.distributed.tensor.experimental._context_parallel._attention as A
import torch.distributed._functional_collectives as F
for o in (A._maybe_wait, A._AllToAllRotater, F.AsyncCollectiveTensor.wait, F.wait_tensor, F.permute_tensor, F.all_to_all_single):
    try:
        print("=====", getattr(o, "__qualname__", o), inspect.getsourcefile(o), inspect.getsourcelines(o)[1]); print(inspect.getsource(o))
    except Exception as e: print("ERR", o, e)
try:
    import torch.distributed.fsdp._fully_shard._fsdp_param_group as G
    for n in ("wait_for_unshard", "unshard", "_wait_all_gather_streams_on_event", "pre_forward", "post_backward"):
        f = getattr(G.FSDPParamGroup, n, None)
        if f: print("=====", n, inspect.getsourcefile(f), inspect.getsourcelines(f)[1]); print(inspect.getsource(f))
except Exception as e: print("ERR fsdp", e)
PY
grep -h "CPEV" $T/log_*.txt | cut -c1-170
(cd $T && tar czf $W/tl.tar.gz ev_*) ; (cd $T && tar czf $W/logs.tar.gz log_*)
python3 - <<'PY'
import json, os
for l in open(os.path.join(os.environ["OUT"], "results.jsonl")):
    r = json.loads(l)
    print(r["label"], "steps", r.get("step_times_s"), r.get("error", "")[:300])
PY
cat $W/driver.txt; ls -la $W
