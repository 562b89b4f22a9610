#!/bin/bash
# Device driver of branch tpck26 (bench/results/tpck26_2026-11-29/README.md): machine facts (CPU
# topology, GPU topology), the jobs of bench/realruns/runs_tpck26.txt through mgpu_driver.py, then
# one pack $OUT/tpck26.tgz (results, logs, per-rank trace summaries) and $OUT/traces.tar (the
# gzipped per-rank traces). Usage on the device (repository root):
#   C=.carry/tpck26 bash .carry/tpck26/bench/tpck26_run.sh DEADLINE_S
set -u
C=${C:-.carry/tpck26}
DEADLINE=${1:-140}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/tpck26-work; rm -rf $W; mkdir -p $W/jobs/prof
T0=$(date +%s)
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA"; nvidia-smi -L
  nvidia-smi topo -m
} > $W/facts.txt 2>&1
lscpu -e > $W/lscpu_e.txt 2>&1
cat $W/facts.txt
LEFT=$(( DEADLINE - ($(date +%s) - T0) ))
sed -e "s#@C@#$C#g" $C/bench/realruns/runs_tpck26.txt > $W/jobs/jobs.txt
python3 $C/bench/realruns/mgpu_driver.py $W/jobs/jobs.txt --out $W/jobs --deadline $LEFT | tee $W/jobs/driver.txt
mkdir -p $W/traces; mv $W/jobs/prof/*.trace.json.gz $W/traces/ 2>/dev/null
tar czf $OUT/tpck26.tgz -C /tmp tpck26-work/facts.txt tpck26-work/lscpu_e.txt tpck26-work/jobs
tar cf $OUT/traces.tar -C $W/traces . 2>/dev/null
ls -la $OUT $W/traces
