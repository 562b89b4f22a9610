#!/bin/bash
# meas26 (issues 14 and 19): `plan measure` of the real 4 x H200 runs' layouts, one process per GPU
# under mpirun (as torchrun starts the real ranks), with the flags bench/realruns/mgpu_fidelity.py
# prices each row with (bench/meas10_jobs.py wrote JOBS). bench/meas10_run.sh with a per-job time
# limit and a start cut-off, so that the whole call stays under the device call's limit.
# Usage (repository root on the GPU machine; C = the carried folder holding cfg/ and the jobs
# file, BIN = the folder holding plan and plan-gpu, W = where the results go, T0 = the call's
# start, date +%s):  C=.carry/meas26 BIN=... W=... T0=... bash $C/meas26_run.sh JOBS START_CUTOFF_S JOB_LIMIT_S [STEPS]
# A job starts only while less than START_CUTOFF_S seconds have passed since T0; each gets
# JOB_LIMIT_S, and none runs past HARD (default 185) s after T0. Writes into W: facts.txt, log.txt, pm-LABEL.json (plan measure --format json),
# LABEL.err (stderr: the human report's progress lines). bench/meas26_call.sh runs it.
set -u
C=${C:-.carry/meas26}
BIN=${BIN:-$C}
W=${W:-/tmp/meas26}
T0=${T0:-$(date +%s)}
JOBS=$1
CUTOFF=${2:-150}
LIMIT=${3:-40}
STEPS=${4:-3}
HARD=${HARD:-185}
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p $W
if ldd $BIN/plan-gpu | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         grep -v site-packages | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
{ date -u; nvidia-smi; nvidia-smi -L; nvidia-smi topo -m; ldd $BIN/plan-gpu | grep -E "nccl|cublas|mpi|not found"
  mpirun --version | head -1; nproc; grep -m1 "model name" /proc/cpuinfo
  (cd $BIN && sha256sum plan plan-gpu); cat $BIN/build.txt 2>/dev/null; } > $W/facts.txt 2>&1
while read -r label ng np cfg rest; do
  [ -z "$label" ] && continue
  el=$(( $(date +%s) - T0 ))
  if [ $el -gt $CUTOFF ]; then echo "skip $label (cut-off, +$el s)" >> $W/log.txt; continue; fi
  lim=$(( HARD - el )); [ $lim -gt $LIMIT ] && lim=$LIMIT   # never past HARD s after T0
  devs=$(seq -s, 0 $((ng-1)))
  t=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=$devs timeout $lim mpirun -np $np --bind-to none -x NCCL_NVLS_ENABLE -x PLAN_DATA_DIR \
     -x LD_LIBRARY_PATH $BIN/plan measure --model $C/$cfg --steps $STEPS --format json $rest \
     < /dev/null > $W/pm-$label.json 2> $W/$label.err
  rc=$?
  echo "$label rc $rc $(( ($(date +%s%N) - t) / 1000000 )) ms (+$el s): mpirun -np $np plan measure --model $cfg --steps $STEPS $rest" >> $W/log.txt
done < $JOBS
date -u >> $W/facts.txt
