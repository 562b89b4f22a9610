#!/bin/bash
# Second device call of branch tpck27: what of the checkpointed backward's host time is
# torch.utils.checkpoint's own (bench/results/tpck27_2026-11-29/README.md section 3). Llama-3.1-8B cut
# to 8 layers at the GPU-free shape (seq 256): none / ckpt / ckpt without early stop / ckpt without
# the determinism check interleaved, then 3 ckpt steps with checkpoint's hooks and recompute timed.
# Usage on the device (repository root): C=.carry/tpck27 bash .carry/tpck27/bench/tpck27_run2.sh 60
set -u
C=${C:-.carry/tpck27}
DEADLINE=${1:-60}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/tpck27-work2; rm -rf $W; mkdir -p $W/x2b
{ date -u; nproc; lscpu | grep -E "Model name|^CPU\(s\)"; nvidia-smi -L; uptime; } > $W/x2b/facts.txt 2>&1
timeout $((DEADLINE + 30)) torchrun --nproc_per_node 2 --master_port 29518 $C/bench/tpck27_matched.py \
  --case llama-3.1-8b:8:256x1 --modes none,ckpt,ckpt-noes,ckpt-nodet --rounds 4 --per 2 --warmup 2 \
  --timed-hooks --no-count --label tpck27b --deadline $DEADLINE --out $W/x2b > $W/x2b/log.txt 2>&1
echo "rc $?" >> $W/x2b/log.txt
tail -3 $W/x2b/log.txt
tar czf $OUT/tpck27b.tgz -C /tmp tpck27-work2
