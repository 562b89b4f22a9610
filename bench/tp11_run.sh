#!/bin/bash
# Device-machine driver of helper tp11 (issues 14, 19; bench/results/tp11_2026-11-28/README.md).
# Machine facts; the eager TP 4 host-bound derivation run hs-tp4-8bL8-s256 alone (it also proves the
# split parallel_run.py: if it fails, the jobs run the pre-split script parallel_run_orig.py
# carried beside it); then bench/realruns/runs_tp11.txt through mgpu_driver.py; every trace
# summarized (trace_ops.py). Packs $OUT/tp11.tgz (results, logs, summaries) and the traces.
# Usage on the device (repository root): C=.carry/tp11 OUT=... bash .carry/tp11/bench/tp11_run.sh DEADLINE_S
# JOBS: the jobs file under bench/realruns (default runs_tp11.txt); FIRST=0 skips the lone first run
# (call 2: JOBS=runs_tp11b.txt FIRST=0).
set -u
C=${C:-.carry/tp11}
DEADLINE=${1:-290}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/tp11-work; rm -rf $W; mkdir -p $W/jobs/prof $W/jobs/logs
T0=$(date +%s)
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Socket|NUMA node\(s\)|MHz"; nvidia-smi -L
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"python",sys.version.split()[0])'
} > $W/facts.txt 2>&1
cat $W/facts.txt
R=$C/bench/realruns/parallel_run.py
PR=parallel_run.py
if [ "${FIRST:-1}" = 1 ]; then
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 70 torchrun --nproc_per_node 4 --master_port 29650 $R --layout tp --tp 4 \
  --clip 0 --host-split --config llama-3.1-8b --layers 8 --seq 256 --mbs 1 --warmup 3 --steps 8 \
  --out $W/jobs/results.jsonl --label hs-tp4-8bL8-s256 > $W/jobs/logs/hs-tp4-8bL8-s256.log 2>&1
echo "hs-tp4-8bL8-s256 rc $? after $(( $(date +%s) - T0 )) s"
if ! grep -q '"label": "hs-tp4-8bL8-s256"' $W/jobs/results.jsonl 2>/dev/null || \
   grep '"label": "hs-tp4-8bL8-s256"' $W/jobs/results.jsonl | grep -q '"error"'; then
  echo "split parallel_run.py FAILED: the jobs run parallel_run_orig.py"; PR=parallel_run_orig.py
  tail -20 $W/jobs/logs/hs-tp4-8bL8-s256.log
fi
fi
LEFT=$(( DEADLINE - ($(date +%s) - T0) ))
sed -e "s#@C@#$C#g" -e "s#@W@#$W/jobs#g" -e "s#/parallel_run.py #/$PR #" $C/bench/realruns/${JOBS:-runs_tp11.txt} > $W/jobs/jobs.txt
python3 $C/bench/realruns/mgpu_driver.py $W/jobs/jobs.txt --out $W/jobs --deadline $LEFT | tee $W/jobs/driver.txt
for t in $W/jobs/prof/*.trace.json.gz; do
  [ -e "$t" ] || continue
  timeout 30 python3 $C/bench/realruns/trace_ops.py "$t" > "${t%.trace.json.gz}.ops.json" 2> "${t%.trace.json.gz}.ops.err"
done
mkdir -p $W/traces; mv $W/jobs/prof/*.trace.json.gz $W/traces/ 2>/dev/null
tar czf $OUT/tp11.tgz -C /tmp tp11-work/facts.txt tp11-work/jobs
[ -n "$(ls $W/traces 2>/dev/null)" ] && tar cf $OUT/traces.tar -C $W/traces .
ls -la $OUT; echo "total $(( $(date +%s) - T0 )) s"
