#!/bin/bash
# ccomp24: allocator traces of native steps with torch.compile'd blocks under the DEFAULT
# allocator (as the realrun.py --impl native --compile runs ran), one GPU, two processes side by
# side (each its own allocator), one spec each; Inductor's generated code kept (its cache dir)
cd "$(dirname "$0")"; cp reserved_growth.py ../../bench/realruns/reserved_growth_cc.py
export NCCL_NVLS_ENABLE=0 MASTER_ADDR=127.0.0.1 RANK=0 LOCAL_RANK=0 WORLD_SIZE=1
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/env.txt 2>&1
python3 -c "import torch,triton;print('torch',torch.__version__,'cuda',torch.version.cuda,'triton',triton.__version__)" >> $OUT/env.txt 2>&1
date -u >> $OUT/env.txt
i=0
for spec in "$@"; do
  i=$((i+1))
  ( t0=$SECONDS
    TORCHINDUCTOR_CACHE_DIR=/tmp/ind_$i MASTER_PORT=$((29600+i)) timeout 110 python3 \
       ../../bench/realruns/reserved_growth_cc.py --out $OUT/reserved_$i.jsonl \
       --runs "$spec" --steps 3 --dump $OUT/trace_$i > $OUT/log_$i.txt 2>&1
    echo "$spec rc=$? $((SECONDS-t0)) s" >> $OUT/times.txt
    mkdir -p $OUT/code_$i
    for f in $(grep -rl --include='*.py' "def call(" /tmp/ind_$i 2>/dev/null); do
      cp "$f" $OUT/code_$i/; done ) &
done
wait
# one archive for what is many files (the device returns at most a few): logs, code, traces
tar -czf $OUT/more.tgz -C $OUT $(cd $OUT && ls -d log_* code_* trace_* 2>/dev/null) && \
  rm -rf $OUT/log_* $OUT/code_* $OUT/trace_*
