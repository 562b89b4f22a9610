#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the twenty-first session's README: the twentieth
# session's (bench/results/session20_2026-11-29/tables.sh: single-GPU and multi-GPU real runs,
# held-out sets ho10-ho21b, the published-run tests, the Llama 3 405B rows) and this session's
# held-out runs (ho22, one H200; ho22b in second/ when present; ho22 x2, 2 x H200). Run from the repository root after building
# build/; no GPU. PLAN_PUBLISHED_RUNS names the published-runs CSV (default
# ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session20_2026-11-29/tables.sh $O
python3 bench/realruns/fidelity.py bench/results/ho22_2026-11-29/results.jsonl > $O/fidelity_ho22_1gpu.txt 2>&1
if [ -f bench/results/ho22_2026-11-29/second/results.jsonl ]; then
  python3 bench/realruns/fidelity.py bench/results/ho22_2026-11-29/second/results.jsonl > $O/fidelity_ho22b_1gpu.txt 2>&1
fi
python3 bench/realruns/mgpu_fidelity.py bench/results/ho22_2026-11-29/x2/jobs > $O/mgpu_fidelity_ho22_x2.txt 2>&1
for f in $O/fidelity_ho22_1gpu.txt $O/fidelity_ho22b_1gpu.txt; do
  [ -f $f ] || continue
  echo "== $f"; grep -E "^step|^memory|^reserved|^feasib" $f | head -4; done
