#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the nineteenth session's README: the eighteenth
# session's (bench/results/session18_2026-11-29/tables.sh: single-GPU and multi-GPU real runs,
# held-out sets ho10-ho19, the published-run tests, the Llama 3 405B rows) and this session's
# held-out runs (ho20, ho20b, ho20c, one H200) and the expandable-segments runs (exp20). Run from the
# repository root after building build/; no GPU. PLAN_PUBLISHED_RUNS names the published-runs CSV
# (default ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session18_2026-11-29/tables.sh $O
python3 bench/realruns/fidelity.py bench/results/ho20_2026-11-29/results.jsonl > $O/fidelity_ho20_1gpu.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho20_2026-11-29/b/results.jsonl > $O/fidelity_ho20b_1gpu.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/exp20_2026-11-29/results.jsonl > $O/fidelity_exp20_1gpu.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho20_2026-11-29/c/results.jsonl > $O/fidelity_ho20c_1gpu.txt 2>&1
for f in $O/fidelity_ho20_1gpu.txt $O/fidelity_ho20b_1gpu.txt $O/fidelity_ho20c_1gpu.txt $O/fidelity_exp20_1gpu.txt; do
  echo "== $f"; grep -E "^step|^memory|^reserved|^feasib" $f | head -4; done
