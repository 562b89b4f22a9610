#!/bin/bash
# The one device call of helper smallrows (2026-11-27), from the repository root of the lent
# machine with the realruns folder carried at $C/bench/realruns:
#   C=.carry/smallrows bash .carry/smallrows/bench/realruns/smallrows_run.sh
# 1) gap_profile.py on the two worst one-GPU rows, 2) the held-out runs, everything tarred to $OUT.
set -u
export NCCL_NVLS_ENABLE=0
R=$C/bench/realruns
mkdir -p bench/realruns
cp -r $R/. bench/realruns/
W=$(mktemp -d)
{ nvidia-smi; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv;
  lscpu | head -20; python3 -c "import torch,transformers;print(torch.__version__,torch.version.cuda,transformers.__version__)"; date -u; } > $W/machine.txt 2>&1
timeout 200 python3 bench/realruns/gap_profile.py --out $W/prof --runs smollm2-360m:2048:8,mixtral-8x7b:4096:1:2 > $W/prof.log 2>&1
echo "gap_profile rc $?" >> $W/prof.log
timeout 190 python3 bench/realruns/driver.py bench/realruns/runs_h100_smallrows.txt --out $W/ho --deadline 150 > $W/ho.log 2>&1
echo "driver rc $?" >> $W/ho.log
tar czf $OUT/smallrows.tgz -C $W .
tail -5 $W/prof.log | cut -c1-600; tail -3 $W/ho.log; cat $W/ho/results.jsonl 2>/dev/null | python3 -c "
import sys,json
for l in sys.stdin:
  r=json.loads(l); print(r.get('label'), r.get('step_s_median'), r.get('step_times_s'), r.get('oom'), r.get('error','')[:200])"
