#!/bin/bash
# tt12 (2026-11-28), second call: the same as tt12_pools_run.sh at 16 layers, eager and compiled
# (expandable segments), to see whether the eager-minus-compiled peak grows with the layers.
# From the repository root of the lent machine: bash bench/realruns/tt12_pools_run2.sh
set -u
export NCCL_NVLS_ENABLE=0
W=$OUT
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv;
  python3 -c "import torch;print(torch.__version__,torch.version.cuda)"; date -u; } > $W/machine.txt 2>&1
run() {  # label, timeout, extra args
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout $2 python3 bench/realruns/realrun.py \
    --config llama-3.1-8b --layers 16 --seq 8192 --mbs 2 --impl native --sac op --warmup 2 \
    --steps 2 --stream-pools --label "$1" --out $W/pools16.jsonl $3 >> $W/log.txt 2>&1
  echo "rc $? $1" >> $W/log.txt
}
run tt12-8bL16-s8k-b2-sac-eager-exp 60 ""
run tt12-8bL16-s8k-b2-sac-cmp-exp 90 "--compile"
python3 - <<'PY'
import json, os
G = 2**30
for l in open(os.path.join(os.environ["OUT"], "pools16.jsonl")):
    r = json.loads(l)
    print(r["label"], r.get("step_s_median"), "alloc %.2f reserved %.2f" % (
        r.get("peak_allocated_bytes", 0) / G, r.get("peak_reserved_bytes", 0) / G),
        r.get("error", "")[:300])
    for k, p in (r.get("stream_pools_end") or {}).items():
        print("   ", k, {a: (round(b / G, 3) if a != "segments" else b) for a, b in p.items()})
PY
