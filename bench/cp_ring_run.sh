#!/bin/bash
# Device-machine driver for bench/cp_ring_micro.py (2 GPUs): a small smoke run first (its log is
# printed; the main run is skipped when it fails), then the measured sweep into $OUT.
# Results: bench/results/cp_ring_2026-11-27/ (README there says what ran where).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT}
{ date -u; nvidia-smi; nvidia-smi topo -m; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.nccl.version(), torch.cuda.device_count())'; } > $OUT/smi.txt 2>&1
timeout 120 torchrun --nproc_per_node 2 bench/cp_ring_micro.py --out /tmp/smoke --seqs 2048 \
    --warmup 1 --reps 1 --rotates alltoall --profile 2048:h32kv8d128rep:flash:alltoall 2>&1 | tail -40
rc=$?
if [ $rc -ne 0 ]; then echo "smoke failed rc=$rc"; cat /tmp/smoke/log*.txt; exit $rc; fi
timeout ${MAIN_TIMEOUT:-400} torchrun --nproc_per_node 2 bench/cp_ring_micro.py --out $OUT "$@" 2>&1 | tail -80
