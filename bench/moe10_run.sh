#!/bin/bash
# Device-machine driver of branch moe10 (issue 20; bench/results/moe10_2026-11-28/README.md): machine
# facts, the EP runs of bench/realruns/runs_moe10.txt (host- vs device-built expert permutation)
# through mgpu_driver.py, the profiled run summarized (trace_ops.py). Packs $OUT/moe10.tgz and the
# gzipped traces while the pack stays under ~18 MB.
# Usage on the device (repository root): C=.carry/moe10 OUT=... bash .carry/moe10/bench/moe10_run.sh DEADLINE_S
set -u
C=${C:-.carry/moe10}
DEADLINE=${1:-220}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/moe10-work; rm -rf $W; mkdir -p $W/jobs/prof
T0=$(date +%s)
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Socket|NUMA node\(s\)"; nvidia-smi -L
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"python",sys.version.split()[0])'
} > $W/facts.txt 2>&1
cat $W/facts.txt
LEFT=$(( DEADLINE - ($(date +%s) - T0) ))
sed -e "s#@C@#$C#g" $C/bench/realruns/${JOBS:-runs_moe10.txt} > $W/jobs/jobs.txt
python3 $C/bench/realruns/mgpu_driver.py $W/jobs/jobs.txt --out $W/jobs --deadline $LEFT | tee $W/jobs/driver.txt
for t in $W/jobs/prof/*.trace.json.gz; do
  [ -e "$t" ] || continue
  timeout 40 python3 $C/bench/realruns/trace_ops.py "$t" > "${t%.trace.json.gz}.ops.json" 2> "${t%.trace.json.gz}.ops.err"
  echo "summarized $t rc $?"
done
nvidia-smi --query-gpu=index,power.draw,temperature.gpu --format=csv > $W/smi_after.txt 2>&1
mkdir -p $W/traces; mv $W/jobs/prof/*.trace.json.gz $W/traces/ 2>/dev/null
tar czf $OUT/moe10.tgz -C /tmp moe10-work/facts.txt moe10-work/jobs moe10-work/smi_after.txt
# traces, smallest first, while the whole stays under 18 MB (one more tar: few files come back)
SZ=$(stat -c %s $OUT/moe10.tgz); KEEP=""
for t in $(ls -S -r $W/traces/*.gz 2>/dev/null); do
  s=$(stat -c %s $t); if [ $((SZ + s)) -lt 18000000 ]; then KEEP="$KEEP $(basename $t)"; SZ=$((SZ + s)); fi
done
[ -n "$KEEP" ] && tar cf $OUT/traces.tar -C $W/traces $KEEP
ls -la $OUT $W/traces
