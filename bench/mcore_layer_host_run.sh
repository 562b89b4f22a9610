#!/bin/bash
# moe7: the attention block's host time beside the MoE block (bench/mcore_layer_host.py)
D=$OUT/layerhost; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv; lscpu | head -16;
  python3 -c "import torch;print(torch.__version__, torch.version.cuda)"; } > $D/env.txt 2>&1
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=2
timeout 170 python3 .carry/moe7/mcore_layer_host.py --mlm .carry/moe7/mlm --out $D > $D/log.txt 2>&1
echo rc=$? >> $D/log.txt
grep -v -i "warn" $D/log.txt | tail -40
cd $OUT && tar czf layerhost.tgz layerhost
