#!/bin/bash
# meas26: the one device call (4 x H200). Repository root on the GPU machine, .carry/meas26 carried:
# base.tar.xz and fix.tar.xz (stripped plan + plan-gpu of main b28920a and of this branch's
# clip-sync commit, each with build.txt), cfg/, the jobs files, meas26_run.sh and
# meas26_mm_host_probe.py. Steps: the matmul host probe on GPU 0; the jobs of meas26_jobs.txt
# with the base binaries until CUT1 s; meas26_jobs_fix.txt with the fix binaries until CUT2 s.
# Writes $OUT/meas26.tgz (probe/, base/, fix/) and $OUT/log.txt.
# Usage: bash .carry/meas26/meas26_call.sh [CUT1 CUT2 JOB_LIMIT HARD]
set -u
C=.carry/meas26
CUT1=${1:-135}; CUT2=${2:-165}; LIM=${3:-30}
export HARD=${4:-185}
export T0=$(date +%s)
R=/tmp/meas26r; rm -rf $R; mkdir -p $R/probe
for b in base fix; do mkdir -p $C/$b && tar xJf $C/$b.tar.xz -C $C/$b; done
PY=python3; [ -x /opt/torch/.venv/bin/python ] && PY=/opt/torch/.venv/bin/python
{ date -u; CUDA_VISIBLE_DEVICES=0 timeout 40 $PY $C/meas26_mm_host_probe.py; echo "rc $?"; date -u; } > $R/probe/mm_host_probe.jsonl 2>&1
C=$C BIN=$C/base W=$R/base bash $C/meas26_run.sh $C/meas26_jobs.txt $CUT1 $LIM 3
C=$C BIN=$C/fix W=$R/fix bash $C/meas26_run.sh $C/meas26_jobs_fix.txt $CUT2 $LIM 3
echo "call end +$(( $(date +%s) - T0 )) s" >> $R/base/log.txt
cd $R && tar czf $OUT/meas26.tgz . && cat base/log.txt fix/log.txt > $OUT/log.txt
