#!/bin/bash
# retry18 (lead, issue 14): does torch's caching allocator's free-and-retry cost step time near
# capacity? Mistral-7B whole, Hugging Face eager FSDP2 on one H200, seq 8192 mbs 1 (ho18's
# held-out row ran at 136.4 GiB with 25 allocator retries over 7 steps and -10.2% against plan):
# the same job with the default allocator, with expandable segments (no split-segment
# fragmentation, so no retries expected), and cut to 30 layers (4.5 GiB less: no pressure).
# Usage on the device (repository root): OUT=... bash bench/realruns/retry18_run.sh
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
R="python3 bench/realruns/realrun.py --config mistral-7b-v0.3 --seq 8192 --mbs 1 --warmup 2 --steps 5 --out $OUT/results.jsonl"
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $OUT/smi.txt
$R --label r18-mis7b-s8k-default 2>&1 | tail -2
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True $R --label r18-mis7b-s8k-expandable 2>&1 | tail -2
$R --layers 30 --label r18-mis7b-L30-s8k-default 2>&1 | tail -2
$R --label r18-mis7b-s8k-default-again 2>&1 | tail -2
