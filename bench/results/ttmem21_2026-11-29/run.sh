#!/bin/bash
# ttmem21: the allocator trace of a torchtitan-shaped native step under expandable segments
# (one spec per process), dumped for holes.py
cd "$(dirname "$0")"; cp reserved_growth.py ../../bench/realruns/reserved_growth_tt.py
export NCCL_NVLS_ENABLE=0 MASTER_ADDR=127.0.0.1 RANK=0 LOCAL_RANK=0 WORLD_SIZE=1
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt 2>&1
python3 -c "import torch;print(torch.__version__, torch.version.cuda)" > $OUT/versions.txt 2>&1
i=0
for spec in "$@"; do
  i=$((i+1)); extra=""
  case "$spec" in *+foreach) extra="--foreach"; spec=${spec%+foreach};; esac
  t0=$SECONDS
  MASTER_PORT=$((29600+i)) timeout 100 python3 ../../bench/realruns/reserved_growth_tt.py --out $OUT/reserved.jsonl \
     --runs "$spec" --steps 3 --dump $OUT/trace_$i $extra > $OUT/log_$i.txt 2>&1
  echo "$spec $extra rc=$? $((SECONDS-t0)) s" >> $OUT/times.txt
done
