#!/bin/bash
# meas10 (issues 14 and 19): `plan measure` of the real multi-GPU runs' layouts on a lent
# 4-GPU machine, one process per GPU under mpirun (as torchrun starts the real ranks), with the
# flags bench/realruns/mgpu_fidelity.py prices each row with (bench/meas10_jobs.py wrote JOBS).
# Usage (repository root on the GPU machine; C = the carried folder holding plan, plan-gpu,
# cfg/ and the jobs file):  C=.carry/meas10 bash $C/meas10_run.sh JOBS DEADLINE_S [STEPS]
# Writes $OUT/meas10.tgz: facts.txt, log.txt, pm-LABEL.json (plan measure --format json),
# LABEL.err (its stderr: the human report's progress lines).
set -u
C=${C:-.carry/meas10}
JOBS=$1
DEADLINE=${2:-200}
STEPS=${3:-5}
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=/tmp/meas10; rm -rf $W; mkdir -p $W
T0=$(date +%s)
if ldd $C/plan-gpu | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         grep -v site-packages | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
{ date -u; nvidia-smi; nvidia-smi topo -m; ldd $C/plan-gpu | grep -E "nccl|cublas|mpi|not found"
  mpirun --version | head -1; nproc; (cd $C && sha256sum plan plan-gpu); cat $C/build.txt 2>/dev/null; } > $W/facts.txt 2>&1
while read -r label ng np cfg rest; do
  [ -z "$label" ] && continue
  el=$(( $(date +%s) - T0 ))
  if [ $el -gt $DEADLINE ]; then echo "skip $label (deadline, +$el s)" >> $W/log.txt; continue; fi
  devs=$(seq -s, 0 $((ng-1)))
  t=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=$devs timeout 60 mpirun -np $np --bind-to none -x NCCL_NVLS_ENABLE -x PLAN_DATA_DIR \
     -x LD_LIBRARY_PATH $C/plan measure --model $C/$cfg --steps $STEPS --format json $rest \
     < /dev/null > $W/pm-$label.json 2> $W/$label.err
  rc=$?
  echo "$label rc $rc $(( ($(date +%s%N) - t) / 1000000 )) ms: mpirun -np $np plan measure --model $cfg --steps $STEPS $rest" >> $W/log.txt
done < $JOBS
cd $W && tar czf $OUT/meas10.tgz . && cp log.txt $OUT/log.txt
