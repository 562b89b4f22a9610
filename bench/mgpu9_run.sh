#!/bin/bash
# Device-machine driver of branch mgpu9 (issues 14, 19; bench/results/mgpu9_2026-11-28/README.md):
# machine facts, the profiled mechanism runs of bench/realruns/runs_mgpu9.txt through
# mgpu_driver.py, then every trace summarized on the machine (trace_ops.py; parallel_run.py already
# wrote trace_summary.py's summary beside each trace). Packs $OUT/mgpu9.tgz: summaries, results,
# logs, and the gzipped traces while the pack stays under ~18 MB.
# Usage on the device (repository root): C=.carry/mgpu9 OUT=... bash .carry/mgpu9/bench/mgpu9_run.sh DEADLINE_S
# NAME (default mgpu9) names the work folder /tmp/NAME-work and the pack $OUT/NAME.tgz; JOBS the
# jobs file under bench/realruns (default runs_NAME.txt). bench/moe10_run.sh is NAME=moe10.
set -u
NAME=${NAME:-mgpu9}
C=${C:-.carry/$NAME}
DEADLINE=${1:-220}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/$NAME-work; rm -rf $W; mkdir -p $W/jobs/prof
T0=$(date +%s)
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Socket|NUMA node\(s\)"; nvidia-smi -L
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"python",sys.version.split()[0])'
} > $W/facts.txt 2>&1
cat $W/facts.txt
LEFT=$(( DEADLINE - ($(date +%s) - T0) ))
sed -e "s#@C@#$C#g" $C/bench/realruns/${JOBS:-runs_$NAME.txt} > $W/jobs/jobs.txt
python3 $C/bench/realruns/mgpu_driver.py $W/jobs/jobs.txt --out $W/jobs --deadline $LEFT | tee $W/jobs/driver.txt
for t in $W/jobs/prof/*.trace.json.gz; do
  [ -e "$t" ] || continue
  timeout 40 python3 $C/bench/realruns/trace_ops.py "$t" > "${t%.trace.json.gz}.ops.json" 2> "${t%.trace.json.gz}.ops.err"
  echo "summarized $t rc $?"
done
nvidia-smi --query-gpu=index,power.draw,temperature.gpu --format=csv > $W/smi_after.txt 2>&1
mkdir -p $W/traces; mv $W/jobs/prof/*.trace.json.gz $W/traces/ 2>/dev/null
tar czf $OUT/$NAME.tgz -C /tmp $NAME-work/facts.txt $NAME-work/jobs $NAME-work/smi_after.txt
# traces, smallest first, while the whole stays under 18 MB (one more tar: few files come back)
SZ=$(stat -c %s $OUT/$NAME.tgz); KEEP=""
for t in $(ls -S -r $W/traces/*.gz 2>/dev/null); do
  s=$(stat -c %s $t); if [ $((SZ + s)) -lt 18000000 ]; then KEEP="$KEEP $(basename $t)"; SZ=$((SZ + s)); fi
done
[ -n "$KEEP" ] && tar cf $OUT/traces.tar -C $W/traces $KEEP
ls -la $OUT $W/traces
