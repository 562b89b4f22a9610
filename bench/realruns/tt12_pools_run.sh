#!/bin/bash
# The caching allocator's per-stream pools under FSDP2 (issue 19, tt12, 2026-11-28): torchtitan's
# Llama-3.1-8B block (realrun.py --impl native, per-op SAC) cut to 8 layers at Table 1's per-GPU
# shape (local batch 2 x seq 8192), one GPU, FSDP2 (one-rank group), peak allocated vs peak
# reserved per step and the segments by stream after the last step; with expandable segments
# (torchtitan's launcher) eager and compiled, and eager without them.
# From the repository root of the lent machine: bash bench/realruns/tt12_pools_run.sh
set -u
export NCCL_NVLS_ENABLE=0
W=$OUT
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv;
  python3 -c "import torch;print(torch.__version__,torch.version.cuda)"; date -u; } > $W/machine.txt 2>&1
run() {  # label, alloc conf, timeout, extra args
  PYTORCH_CUDA_ALLOC_CONF=$2 timeout $3 python3 bench/realruns/realrun.py --config llama-3.1-8b \
    --layers 8 --seq 8192 --mbs 2 --impl native --sac op --warmup 2 --steps 2 --stream-pools \
    --label "$1" --out $W/pools.jsonl $4 >> $W/log.txt 2>&1
  echo "rc $? $1" >> $W/log.txt
}
run tt12-8bL8-s8k-b2-sac-eager-exp "expandable_segments:True" 60 ""
run tt12-8bL8-s8k-b2-sac-eager-noexp "" 60 ""
run tt12-8bL8-s8k-b2-sac-cmp-exp "expandable_segments:True" 100 "--compile"
python3 - <<'PY'
import json, os
G = 2**30
for l in open(os.path.join(os.environ["OUT"], "pools.jsonl")):
    r = json.loads(l)
    print(r["label"], r.get("step_s_median"), "alloc %.2f reserved %.2f" % (
        r.get("peak_allocated_bytes", 0) / G, r.get("peak_reserved_bytes", 0) / G),
        [round(x / G, 2) for x in r.get("step_peak_allocated_bytes", [])],
        [round(x / G, 2) for x in r.get("step_peak_reserved_bytes", [])], r.get("error", "")[:300])
    for k, p in (r.get("stream_pools_end") or {}).items():
        print("   ", k, {a: (round(b / G, 3) if a != "segments" else b) for a, b in p.items()})
PY
