#!/bin/bash
# meas12 call 3 (after a3df7cc): the eager-kernel checks against the CPU, then plan measure of the
# rows the two reduction fixes move most (both native GQA rows, a Qwen3 QK-norm row, an HF row).
# From the repository root of the GPU machine's tree; writes $OUT/meas12.tgz.
set -u
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
mkdir -p $OUT/meas12
PLAN_GPU_TEST_EW_ONLY=1 timeout 30 .carry/meas12/test_backend_gpu > $OUT/meas12/test_ew.txt 2>&1
echo "test rc $?" >> $OUT/meas12/test_ew.txt
tail -4 $OUT/meas12/test_ew.txt
LIMIT=${LIMIT:-32} bash .carry/meas12/meas12_run.sh
