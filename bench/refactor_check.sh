#!/usr/bin/env bash
# refactor_check.sh — issue 13's GPU check that the restructured backend (one layer recipe,
# bk_measure split into pools / step / instrumentation, one timing engine) measures what the
# old one did: the backend's GPU test, then `plan measure` of the same one-GPU layouts by the
# binary before the refactor (OLD, commit 1636d74) and after it (NEW), interleaved so both see
# the same clocks. Logs and JSON under $OUT.
#
# Usage on a one-GPU machine, from the repository root, with the carried builds:
#   OLD=.carry/old NEW=.carry/bk bash bench/refactor_check.sh
set -uo pipefail
OUT=${OUT:-refactor-check-out}
OLD=${OLD:-.carry/old}
NEW=${NEW:-.carry/bk}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
log=$OUT/log.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; } >"$log" 2>&1
sys=h100
nvidia-smi -L | grep -q H200 && sys=h200
echo "=== test_backend_gpu" >>"$log"
timeout 240 "$NEW/test_backend_gpu" >>"$log" 2>&1; echo "exit $?" >>"$log"
i=0
while read -r args; do
  i=$((i+1))
  for round in 1 2; do
    for which in old new; do
      bin=$OLD; [ $which = new ] && bin=$NEW
      echo "=== [$i.$round $which] plan measure $args" >>"$log"
      timeout 200 "$bin/plan" measure --system $sys $args --steps 5 --format json \
        >"$OUT/m${i}_${which}_r$round.json" 2>>"$log"
      echo "exit $?" >>"$log"
    done
  done
done <<'L'
--model 1b --framework fsdp2 --gpus 1 --gbs 2 --mbs 2
--model 3b --framework megatron --gpus 1 --gbs 4 --mbs 1 --recompute selective
--model 1b --framework megatron --gpus 1 --gbs 8 --mbs 2 --recompute full
L
python3 - "$OUT" >>"$log" 2>&1 <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print("%-16s %11s %11s %11s %13s %13s" % ("file", "measured_s", "spread", "predicted_s",
                                           "peak_bytes", "pred_bytes"))
for f in sorted(glob.glob(os.path.join(out, "m*_*.json"))):
    try:
        j = json.load(open(f))
        m, p = j["measured"], j["predicted"]
        print("%-16s %11.5f %11.4f %11.5f %13.0f %13.0f" % (os.path.basename(f), m["step_s"],
              m.get("step_spread", 0), p["step_s"], m["peak_memory_bytes"], p["memory_bytes"]))
    except Exception as e:
        print("%-16s unreadable: %s" % (os.path.basename(f), e))
PY
