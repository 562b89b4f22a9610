#!/bin/bash
# Device-machine driver (4 GPUs): the host (CPU) issue time of PyTorch's ring attention at CP 2
# and CP 4, with the plain eager launch and plain SDPA host times of the same machine as
# baselines (bench/cp_ring_micro.py). Results: bench/results/cp_ring_host_<date>/ (README there).
# Usage on the device: OUT=... bash bench/cp_ring_host_run.sh
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT}
{ date -u; nvidia-smi; nproc; lscpu | head -20; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.nccl.version(), torch.cuda.device_count())'; } > $OUT/smi.txt 2>&1
ARGS="--seqs ${SEQS:-4096,8192,16384} --shapes ${SHAPES:-h32kv8d128gqa,h16kv8d128rep} --backends flash,cudnn --rotates allgather,alltoall"
for n in 2 4; do
  mkdir -p $OUT/cp$n
  timeout ${CASE_TIMEOUT:-240} torchrun --nproc_per_node $n bench/cp_ring_micro.py --out $OUT/cp$n $ARGS --profile "" 2>&1 | tail -40
done
