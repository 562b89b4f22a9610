#!/bin/bash
# meas13's second device call: the eager kernels against the CPU (the new fp32 sums and fp32
# chunk_cat among them), then plan measure of the torch-pipelining rows (jobs2.txt) with the
# backend that runs FSDP2's no-sync gradient sums, and one unchanged row as a control.
set -u
C=.carry/meas13
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
mkdir -p $OUT
PLAN_GPU_TEST_EW_ONLY=1 timeout 40 $C/test_backend_gpu > $OUT/test_ew.txt 2>&1; echo "test rc $?" >> $OUT/test_ew.txt
tail -5 $OUT/test_ew.txt
C=$C bash $C/meas10_run.sh $C/jobs2.txt ${JOBS_DEADLINE:-45} 3
cat $OUT/log.txt
