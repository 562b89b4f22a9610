#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the twenty-third session's README: the twenty-second
# session's (bench/results/session22_2026-11-29/tables.sh: single-GPU and multi-GPU real runs,
# held-out sets ho10-ho23, the published-run tests, the Llama 3 405B rows) and this session's
# held-out runs on one H200: ho24 (first/a, and first/b under expandable segments) and ho24b
# (first/a). Run from the repository root after building build/; no GPU.
# PLAN_PUBLISHED_RUNS names the published-runs CSV (default ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session22_2026-11-29/tables.sh $O
H=bench/results/ho24_2026-11-29/first
cat $H/a/results.jsonl $H/b/results.jsonl > $O/ho24_all.jsonl
python3 bench/realruns/fidelity.py $O/ho24_all.jsonl > $O/fidelity_ho24_1gpu.txt 2>&1
rm -f $O/ho24_all.jsonl
python3 bench/realruns/fidelity.py bench/results/ho24b_2026-11-29/first/a/results.jsonl > $O/fidelity_ho24b_1gpu.txt 2>&1
for f in $O/fidelity_ho24_1gpu.txt $O/fidelity_ho24b_1gpu.txt; do
  echo "== $f"; grep -E "^step|^memory|^reserved|^feasib" $f | head -4; done
