#!/bin/bash
# Held-out multi-GPU runs (2026-11-27, third session): real training steps on 4 GPUs of shapes
# and models none of the model's multi-GPU terms were derived from (bench/realruns/README.md
# "Peak memory on multi-GPU runs" used bench/results/mgpu_2026-11-27), to check step time and
# peak memory out of sample. Repository root, results under $OUT; compared here with
# `python3 bench/realruns/mgpu_fidelity.py bench/results/heldout_2026-11-27/<folder>`.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/heldout_out}
mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi topo -m; nproc; python3 -c 'import torch,sys,transformers; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), transformers.__version__)'; } > "$OUT/facts.txt" 2>&1
R=bench/realruns/parallel_run.py
J="--warmup 2 --steps 5 --out $OUT/results.jsonl"
run() { local t=$1; shift; echo "== $*" >> "$OUT/log.txt"; timeout $t torchrun --nproc_per_node 4 --master_port $((29500 + RANDOM % 400)) "$@" >> "$OUT/log.txt" 2>&1; echo "rc=$?" >> "$OUT/log.txt"; }
run 150 bench/realruns/realrun.py --config qwen2.5-1.5b --seq 4096 --mbs 2 $J --label fsdp-hf-q25-15b-ws4
run 150 bench/realruns/realrun.py --config llama-3.2-3b --impl native --seq 4096 --mbs 2 $J --label fsdp-nat-l3b-ws4
run 120 $R --layout tp --tp 4 --config llama-3.2-3b --layers 8 --seq 4096 --mbs 2 $J --label tp4-l3bL8-b2
run 150 $R --layout pp --pp 4 --microbatches 8 --config llama-3.2-3b --seq 4096 --mbs 1 $J --label pp4-1f1b-l3b-m8
run 150 $R --layout pp --pp 4 --vpp 2 --microbatches 8 --config qwen3-8b --layers 16 --seq 4096 --mbs 1 $J --label pp4v2-int-q3-8bL16-m8
run 120 $R --layout cp --cp 4 --config llama-3.2-1b --seq 32768 --mbs 1 $J --label cp4-l1b-s32k
grep -h "^REALRUN" "$OUT/log.txt" | cut -c1-200
ls -la "$OUT"
