#!/bin/bash
# Device-machine driver of branch mgpu8 (issues 14, 19; bench/results/mgpu8_2026-11-28/README.md):
# machine facts, the power of NCCL collectives beside / between GEMMs (bench/coll_power.py, every
# GPU), then the held-out real runs of bench/realruns/runs_mgpu8.txt through mgpu_driver.py;
# everything packed into $OUT/mgpu8.tgz.
# Usage on the device (repository root): C=.carry/mgpu8 OUT=... bash .carry/mgpu8/bench/mgpu8_run.sh DEADLINE_S [power|jobs|power,jobs]
set -u
C=${C:-.carry/mgpu8}
DEADLINE=${1:-420}
PARTS=${2:-power,jobs}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/mgpu8-work; rm -rf $W; mkdir -p $W/jobs $W/power
T0=$(date +%s)
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Socket|Thread|NUMA node\(s\)"; nvidia-smi -L
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"python",sys.version.split()[0])'
} > $W/facts.txt 2>&1
cat $W/facts.txt
if [[ $PARTS == *power* ]]; then
  timeout 150 torchrun --nproc_per_node 4 --master_port 29650 $C/bench/coll_power.py --out $W/power > $W/power/log.txt 2>&1
  echo "power rc $?"; tail -30 $W/power/log.txt
fi
if [[ $PARTS == *jobs* ]]; then
  LEFT=$(( DEADLINE - ($(date +%s) - T0) ))
  sed -e "s#@C@#$C#g" $C/bench/realruns/${JOBS:-runs_mgpu8.txt} > $W/jobs/jobs.txt
  python3 $C/bench/realruns/mgpu_driver.py $W/jobs/jobs.txt --out $W/jobs --deadline $LEFT | tee $W/jobs/driver.txt
fi
nvidia-smi --query-gpu=index,power.draw,temperature.gpu --format=csv > $W/smi_after.txt 2>&1
tar czf $OUT/mgpu8.tgz -C /tmp mgpu8-work
ls -la $OUT
