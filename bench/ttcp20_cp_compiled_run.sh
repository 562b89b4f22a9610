#!/bin/bash
# ttcp20 device driver, NOT YET RUN (no device time in session 19; bench/results/ttcp20_2026-11-29):
# the measurement that would settle issue 19's Table 2 CP rows. torchtitan's 2024-12 CP rows ran
# the ring inside torch.compile'd, fully checkpointed blocks with the all-gather rotate method;
# every real CP run so far was eager with alltoall. This times real steps of Llama 3.1 8B cut to
# LAYERS layers with the same 32k tokens per GPU at CP 2 (2 GPUs) and CP 4 (4 GPUs), eager and
# compiled, both with torchtitan 9dec370's allgather rotation and full checkpointing
# (bench/realruns/parallel_run.py --layout cp). What to read from it: (1) compiled / eager at the
# same CP (ttpub18's rule: a traced ring waits for its collectives at once); (2) each run against
# plan's estimate of it (python3 bench/realruns/mgpu_fidelity.py on results.jsonl): the published
# Table 2 steps cost 1.63x more per unit of CP from CP 2 to CP 4 than from CP 1 to CP 2 (README
# there); if that step change is in the compiled ring, cp4-compiled misses by far more than cp2.
# Needs 4 GPUs of one host (kind nvidia-h200-x4 or an H100 x4); about 6-9 minutes with compiles:
#   OUT=$OUT LAYERS=4 bash bench/ttcp20_cp_compiled_run.sh
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # torchtitan 9dec370 run_llama_train.sh
LAYERS=${LAYERS:-4}
mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi topo -m; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.device_count())'; } > "$OUT/machine.txt" 2>&1
run() {  # run NGPU CP SEQ LABEL [extra args]
    local n=$1 cp=$2 seq=$3 label=$4; shift 4
    local vis=0; for ((i = 1; i < n; i++)); do vis="$vis,$i"; done
    CUDA_VISIBLE_DEVICES=$vis timeout 170 torchrun --nproc_per_node "$n" bench/realruns/parallel_run.py \
        --config llama-3.1-8b --layers "$LAYERS" --layout cp --cp "$cp" --seq "$seq" --mbs 1 --ckpt \
        --cp-rotate allgather --warmup 3 --steps 6 --label "$label" --out "$OUT/results.jsonl" "$@" \
        > "$OUT/log-$label.txt" 2>&1
    echo "$label rc=$? $(grep -c . "$OUT/results.jsonl" 2>/dev/null) records"
}
run 2 2 65536 cp2-eager
run 4 4 131072 cp4-eager
run 2 2 65536 cp2-compiled --compile
run 4 4 131072 cp4-compiled --compile
