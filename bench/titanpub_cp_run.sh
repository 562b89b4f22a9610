#!/bin/bash
# titanpub device driver (4 x H100; results: bench/results/titanpub_2026-11-28): PyTorch context_parallel ring attention at CP 4 and CP 2 with
# the same 32k tokens per GPU, both rotate methods, FLASH backend (bench/cp_ring_micro.py).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
mkdir -p $OUT/cp4 $OUT/cp2
{ date -u; nvidia-smi; nvidia-smi -q -d POWER,CLOCK | head -80; nvidia-smi topo -m; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.nccl.version(), torch.cuda.device_count())'; } > $OUT/smi.txt 2>&1
timeout 150 torchrun --nproc_per_node 4 bench/cp_ring_micro.py --out $OUT/cp4 --seqs 131072,65536 \
   --shapes h32kv8d128rep,h16kv1d128rep --backends flash --rotates allgather,alltoall --warmup 2 --reps 5 \
   --profile 131072:h32kv8d128rep:flash:allgather 2>&1 | grep -v Warning | tail -30
echo "cp4 rc=$?"
CUDA_VISIBLE_DEVICES=0,1 timeout 60 torchrun --nproc_per_node 2 bench/cp_ring_micro.py --out $OUT/cp2 --seqs 65536 \
   --shapes h32kv8d128rep,h16kv1d128rep --backends flash --rotates allgather,alltoall --warmup 2 --reps 5 --profile "" 2>&1 | grep -v Warning | tail -20
echo "cp2 rc=$?"
# torch_cp_attention.py (torch's own source, copied by cp_ring_micro.py to read) is not committed
cd $OUT && tar czf r.tgz cp4 cp2 smi.txt && rm -rf cp4/traces.tar.bak
