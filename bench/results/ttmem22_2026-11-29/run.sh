#!/bin/bash
# ttmem22: allocator traces of trainy's configuration (SAC + compiled blocks + compiled loss;
# bf16 and torchao float8 tensorwise with FSDP float8 all-gather + precomputed scales), one GPU,
# expandable segments; two processes side by side (each its own allocator), one spec each
cd "$(dirname "$0")"; cp reserved_growth_tt.py ../../bench/realruns/reserved_growth_tt.py
mkdir -p /tmp/ao && tar -xzf ao.tgz -C /tmp/ao
export PYTHONPATH=/tmp/ao TORCHAO_FORCE_SKIP_LOADING_SO_FILES=1
export NCCL_NVLS_ENABLE=0 MASTER_ADDR=127.0.0.1 RANK=0 LOCAL_RANK=0 WORLD_SIZE=1
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/env.txt 2>&1
python3 -c "import torch;print(torch.__version__, torch.version.cuda)" >> $OUT/env.txt 2>&1
i=0
for item in "$@"; do
  i=$((i+1)); spec=${item%%+*}; extra=""
  case "$item" in *+cl*) extra="$extra --compile-loss";; esac
  case "$item" in *+fp8fsdp*) extra="$extra --fp8 tensorwise-fsdp";; *+fp8*) extra="$extra --fp8 tensorwise";; esac
  ( t0=$SECONDS
    MASTER_PORT=$((29600+i)) timeout 95 python3 ../../bench/realruns/reserved_growth_tt.py --out $OUT/reserved_$i.jsonl \
       --runs "$spec" --steps 3 --dump $OUT/trace_$i $extra > $OUT/log_$i.txt 2>&1
    echo "$item $extra rc=$? $((SECONDS-t0)) s" >> $OUT/times.txt ) &
done
wait
