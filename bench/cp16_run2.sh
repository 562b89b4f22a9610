#!/bin/bash
# cp16 call 2 (2026-11-28), 2 x H200: is the per-step host slowdown of one rank (cp16 call 1: the
# same Python 1.2-1.6x slower for whole steps) CPU placement? Qwen3-1.7B ring CP 2, seq 8192, GC
# off, (a) each rank's threads pinned to CPUs of distinct physical cores (CP_EVENTS_PIN, from
# lscpu's CORE column), (b) unpinned (repeat of call 1's cp2-tl-gcoff); the CPU topology, the
# CPU each mark ran on, every thread's CPU time and the host's steal time (cp_timeline.py).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=${OUT:?}; C=.carry/cp16/bench/realruns; T=/tmp/cp16; mkdir -p $T
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv; nproc;
  lscpu; lscpu -p=CPU,CORE,SOCKET,NODE | grep -v '^#' | tr '\n' ' '; echo; nvidia-smi topo -m;
  grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep -c hypervisor; uptime; cat /proc/loadavg;
  python3 -c "import torch;print(torch.__version__,torch.version.cuda,torch.cuda.nccl.version())"; } > $W/machine.txt 2>&1
# rank r: the first CPU of cores 6r..6r+5 (one CPU a core; the siblings left idle)
PIN=$(lscpu -p=CPU,CORE | grep -v '^#' | python3 -c "
import sys
first = {}
for l in sys.stdin:
    c, k = map(int, l.split(','))
    first.setdefault(k, c)
cores = sorted(first)
print(';'.join(','.join(str(first[k]) for k in cores[6 * r:6 * r + 6]) for r in range(2)))")
echo "PIN $PIN" >> $W/machine.txt
P=0; T0=$(date +%s); DEADLINE=${DEADLINE:-50}
run() {  # label timeout nproc env args...
  L=$1; TO=$2; N=$3; E=$4; shift 4; P=$((P+1))
  el=$(( $(date +%s) - T0 )); [ $((el + 18)) -gt $DEADLINE ] && { echo "skip $L at $el s" >> $W/driver.txt; return; }
  t0=$(date +%s.%N)
  env $E CP_EVENTS_GC=off CP_EVENTS_TIMELINE=1 CP_EVENTS_OUT=$T/ev_$L CUDA_VISIBLE_DEVICES=0,1 timeout $TO torchrun --nproc_per_node $N --master_port $((29900+P)) \
    $C/cp_ring_events.py "$@" --label $L --out $W/results.jsonl >> $T/log_$L.txt 2>&1
  echo "rc $? $L $(python3 -c "import time;print(round(time.time()-$t0,1))") s" >> $W/driver.txt
}
Q="--config qwen3-1.7b --mbs 1 --warmup 2 --steps 8 --host-split"
run cp2-gcoff-pin 30 2 CP_EVENTS_PIN=$PIN --layout cp --cp 2 --seq 8192 $Q
run cp2-gcoff-b 30 2 X=1 --layout cp --cp 2 --seq 8192 $Q
(cd $T && tar czf $W/tl.tar.gz ev_* log_*)
python3 - <<'PY'
import json, os
for l in open(os.path.join(os.environ["OUT"], "results.jsonl")):
    r = json.loads(l)
    print(r["label"], "steps", r.get("step_times_s"), r.get("error", "")[:300])
PY
cat $W/driver.txt; tail -4 $W/machine.txt
