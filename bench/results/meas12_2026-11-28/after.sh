#!/bin/bash
# meas12 call 3: the eager-kernel checks (repeat_kv's middle-dimension sum among them) and the two
# rows whose work changed (native eager Llama with GQA), after the fix. From the repo root.
set -u
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
mkdir -p $OUT/meas12
PLAN_GPU_TEST_EW_ONLY=1 timeout 60 .carry/meas12/test_backend_gpu > $OUT/meas12/test_ew.txt 2>&1
echo "test rc $?" >> $OUT/meas12/test_ew.txt
tail -3 $OUT/meas12/test_ew.txt
LIMIT=60 bash .carry/meas12/meas12_run.sh
