#!/bin/bash
# torchtitan's compiled loss, measured (issue 19; lead, 2026-11-28): the native Llama trainer of
# realrun.py with its blocks compiled, the loss eager (torchtitan 9dec370, 2024) or compiled too
# (torchtitan since 2025: compile.components = ["model", "loss"]). Same model, seq and micro-batch
# in pairs on one GPU; peak allocated and step time per run. From the repository root of the lent
# machine:  bash bench/realruns/compile_loss_run.sh   (writes $OUT/compile_loss.jsonl, machine.txt)
set -u
export NCCL_NVLS_ENABLE=0
W=$OUT
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv;
  python3 -c "import torch;print(torch.__version__,torch.version.cuda)"; date -u; } > $W/machine.txt 2>&1
for cfg in "llama-3.2-1b 4096 4" "qwen2.5-1.5b 4096 2"; do
  set -- $cfg
  for cl in "" "--compile-loss"; do
    timeout 150 python3 bench/realruns/realrun.py --config $1 --seq $2 --mbs $3 --impl native --compile \
      $cl --warmup 3 --steps 6 --label "cl-$1-$2-$3${cl:+-compiled}" --out $W/compile_loss.jsonl \
      >> $W/log.txt 2>&1
    echo "rc $? $1 $cl" >> $W/log.txt
  done
done
python3 - <<'PY'
import json, os
for l in open(os.path.join(os.environ["OUT"], "compile_loss.jsonl")):
    r = json.loads(l)
    print(r["label"], r.get("gpu"), r.get("step_s_median"), r.get("peak_allocated_bytes", 0) / 2**30,
          r.get("peak_reserved_bytes", 0) / 2**30, r.get("oom"), r.get("error", "")[:300])
PY
