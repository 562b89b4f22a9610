#!/bin/bash
# Held-out multi-GPU runs, fourth session (2026-11-27): real training steps on 4 GPUs of models
# and shapes that neither the overlap-contention factors (bench/results/contention_2026-11-27,
# GEMM/collective micro-benchmarks) nor the CP ring terms (bench/results/cp_ring_2026-11-27,
# Llama shapes at CP 2) were derived from. Repository root, results under $OUT; compared with
# `python3 bench/realruns/mgpu_fidelity.py bench/results/heldout2_2026-11-27/<folder>`.
# RUNS=REGEX runs only the runs whose command matches (parallel_run's layouts run on
# cp / pp / tp ranks: their scripts have no data-parallel dimension). The TP run clips no
# gradients: clip_grad_norm_ over Qwen3's replicated q/k norms and the TP-sharded weights
# stacks norms on two meshes, which DTensor refuses (torch 2.11).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/heldout2_out}
mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi topo -m; nproc; python3 -c 'import torch,sys,transformers; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), transformers.__version__)'; } > "$OUT/facts.txt" 2>&1
R=bench/realruns/parallel_run.py
J="--warmup 2 --steps 5 --out $OUT/results.jsonl"
run() { local t=$1 n=$2; shift 2; [[ "$*" =~ ${RUNS:-.} ]] || return 0; echo "== $*" >> "$OUT/log.txt"; timeout $t torchrun --nproc_per_node $n --master_port $((29500 + RANDOM % 400)) "$@" >> "$OUT/log.txt" 2>&1; echo "rc=$?" >> "$OUT/log.txt"; }
run 110 4 bench/realruns/realrun.py --config mistral-7b-v0.3 --impl native --seq 4096 --mbs 1 --ckpt $J --label fsdp-nat-m7b-ckpt-ws4
run 90 4 bench/realruns/realrun.py --config phi-3-mini-4k --seq 4096 --mbs 2 $J --label fsdp-hf-phi3-ws4
run 110 4 bench/realruns/realrun.py --config llama-3.1-8b --impl native --seq 8192 --mbs 1 --ckpt $J --label fsdp-nat-l8b-s8k-ckpt-ws4
run 80 2 $R --layout tp --tp 2 --config qwen3-4b --layers 12 --seq 4096 --mbs 2 --clip 0 $J --label tp2-q3-4bL12-b2-noclip
run 80 4 $R --layout cp --cp 4 --config qwen3-1.7b --seq 16384 --mbs 1 $J --label cp4-q3-17b-s16k
run 90 4 $R --layout pp --pp 4 --microbatches 8 --config mistral-7b-v0.3 --layers 16 --seq 4096 --mbs 1 $J --label pp4-1f1b-m7bL16-m8
grep -h "^REALRUN" "$OUT/log.txt" | cut -c1-200
grep -h "rc=" "$OUT/log.txt" | tr '\n' ' '
