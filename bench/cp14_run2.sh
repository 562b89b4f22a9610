#!/bin/bash
# cp14 call 2 (2026-11-28), 2 x H200: (a) Qwen3-1.7B ring CP 2 at seq 8192 with FSDP2 on a process
# group of its own (CP_EVENTS_FSDP_OWN_GROUP=1), (b) the same with one shared group (parallel_run's
# own setup), both under bench/realruns/cp_ring_events.py; (c) FSDP2 at 1 rank and (d) at 2 ranks,
# seq 4096 a GPU, --host-split: the FSDP2 multi-rank host question of tt13 section 4 on one host.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=${OUT:?}; C=.carry/cp14/bench/realruns
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv; nproc;
  lscpu | grep -i "model name"; python3 -c "import torch;print(torch.__version__,torch.version.cuda,torch.cuda.nccl.version())"; } > $W/machine.txt 2>&1
P=0; T0=$(date +%s); DEADLINE=${DEADLINE:-80}
run() {  # label timeout nproc env args...
  L=$1; T=$2; N=$3; E=$4; shift 4; P=$((P+1))
  el=$(( $(date +%s) - T0 )); [ $((el + 22)) -gt $DEADLINE ] && { echo "skip $L at $el s" >> $W/driver.txt; return; }
  t0=$(date +%s.%N)
  env $E CP_EVENTS_OUT=$W/ev_$L CUDA_VISIBLE_DEVICES=0,1 timeout $T torchrun --nproc_per_node $N --master_port $((29700+P)) \
    $C/cp_ring_events.py "$@" --label $L --out $W/results.jsonl >> $W/log_$L.txt 2>&1
  echo "rc $? $L $(python3 -c "import time;print(round(time.time()-$t0,1))") s" >> $W/driver.txt
}
Q="--config qwen3-1.7b --mbs 1 --warmup 2 --steps 5 --host-split"
run cp2-own-ev 40 2 CP_EVENTS_FSDP_OWN_GROUP=1 --layout cp --cp 2 --seq 8192 $Q
run cp2-shared-ev 40 2 CP_EVENTS_FSDP_OWN_GROUP=0 --layout cp --cp 2 --seq 8192 $Q
run dp1-s4k-ev 35 1 X=1 --layout tp --tp 1 --seq 4096 $Q
run dp2-s4k-ev 35 2 X=1 --layout tp --tp 1 --seq 4096 $Q
grep -h "CPEV" $W/log_*.txt | cut -c1-170
python3 - <<'PY'
import json, os, statistics as st
for l in open(os.path.join(os.environ["OUT"], "results.jsonl")):
    r = json.loads(l); hs = r.get("host_split") or {}
    f = [x for x in hs.get("fwd_block_s", []) if x]; b = [x for x in hs.get("bwd_block_s", []) if x]
    print(r["label"], "steps", r.get("step_times_s"), "fwd blk med %.2f bwd blk med %.2f ms" % (1e3*st.median(f), 1e3*st.median(b)) if f and b else "",
          {k: round(1e3*v, 1) for k, v in (hs.get("parts_s") or {}).items()}, r.get("error", "")[:300])
PY
cat $W/driver.txt
