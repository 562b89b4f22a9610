#!/bin/bash
# Device-machine driver for the DTensor TP host/GPU check (issues 19, 14): machine facts (GPU,
# host CPU model), then bench/realruns/runs_tphost.txt through mgpu_driver.py, everything packed
# into $OUT/tphost.tgz. Results: bench/results/tphost_2026-11-27/ (README there).
# Usage on the device (repository root): C=.carry/tphost OUT=... bash .carry/tphost/bench/tphost_run.sh DEADLINE_S
set -u
C=${C:-.carry/tphost}
DEADLINE=${1:-210}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/tphost-work; rm -rf $W; mkdir -p $W/jobs $W/prof
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Socket|Thread|NUMA node\(s\)|MHz"; nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"python",sys.version.split()[0])'
} > $W/facts.txt 2>&1
cat $W/facts.txt
sed -e "s#@C@#$C#g" -e "s#@W@#$W#g" $C/bench/realruns/${JOBS:-runs_tphost.txt} > $W/jobs/jobs.txt
python3 $C/bench/realruns/mgpu_driver.py $W/jobs/jobs.txt --out $W/jobs --deadline $DEADLINE | tee $W/jobs/driver.txt
tar czf $OUT/tphost.tgz -C /tmp tphost-work
ls -la $OUT
