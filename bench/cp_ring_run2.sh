#!/bin/bash
# Second device call (2 GPUs): the ring's SDPA call shapes alone on GPU 0 for cp 2/4/8
# (bench/cp_chunk_shapes.py), then one CP 2 case profiled on both ranks (load balance).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT}
rm -rf /tmp/cptrace
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 bench/cp_chunk_shapes.py --out $OUT/chunks.jsonl 2>&1 | tee $OUT/chunks.log | tail -60
timeout 150 torchrun --nproc_per_node 2 bench/cp_ring_micro.py --out $OUT --seqs 32768 \
    --shapes h32kv8d64rep,h32kv8d128gqa --backends flash --rotates alltoall --trace-all-ranks \
    --profile 32768:h32kv8d64rep:flash:alltoall,32768:h32kv8d128gqa:flash:alltoall 2>&1 | grep -v Warn | tail -20
