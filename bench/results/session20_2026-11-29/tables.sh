#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the twentieth session's README: the nineteenth
# session's (bench/results/session19_2026-11-29/tables.sh: single-GPU and multi-GPU real runs,
# held-out sets ho10-ho20c, the published-run tests, the Llama 3 405B rows) and this session's
# held-out runs (ho21, one H200; ho21b when present). Run from the repository root after building
# build/; no GPU. PLAN_PUBLISHED_RUNS names the published-runs CSV (default
# ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session19_2026-11-29/tables.sh $O
python3 bench/realruns/fidelity.py bench/results/ho21_2026-11-29/results.jsonl > $O/fidelity_ho21_1gpu.txt 2>&1
if [ -f bench/results/ho21_2026-11-29/b/results.jsonl ]; then
  python3 bench/realruns/fidelity.py bench/results/ho21_2026-11-29/b/results.jsonl > $O/fidelity_ho21b_1gpu.txt 2>&1
fi
for f in $O/fidelity_ho21_1gpu.txt $O/fidelity_ho21b_1gpu.txt; do
  [ -f $f ] || continue
  echo "== $f"; grep -E "^step|^memory|^reserved|^feasib" $f | head -4; done
