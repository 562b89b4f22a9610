#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the twenty-second session's README: the twenty-first
# session's (bench/results/session21_2026-11-29/tables.sh: single-GPU and multi-GPU real runs,
# held-out sets ho10-ho22, the published-run tests, the Llama 3 405B rows) and this session's
# held-out runs (ho23, one H200: results.jsonl plus b/ under expandable segments; ho23b in
# second/, ho23c in third/, when present). Run from the repository root after building build/; no GPU.
# PLAN_PUBLISHED_RUNS names the published-runs CSV (default ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session21_2026-11-29/tables.sh $O
H=bench/results/ho23_2026-11-29
cat $H/results.jsonl $H/b/results.jsonl > $O/ho23_all.jsonl
python3 bench/realruns/fidelity.py $O/ho23_all.jsonl > $O/fidelity_ho23_1gpu.txt 2>&1
rm -f $O/ho23_all.jsonl
if [ -f $H/second/results.jsonl ]; then
  python3 bench/realruns/fidelity.py $H/second/results.jsonl > $O/fidelity_ho23b_1gpu.txt 2>&1
fi
if [ -f $H/third/results.jsonl ]; then
  python3 bench/realruns/fidelity.py $H/third/results.jsonl > $O/fidelity_ho23c_1gpu.txt 2>&1
fi
for f in $O/fidelity_ho23_1gpu.txt $O/fidelity_ho23b_1gpu.txt $O/fidelity_ho23c_1gpu.txt; do
  [ -f $f ] || continue
  echo "== $f"; grep -E "^step|^memory|^reserved|^feasib" $f | head -4; done
