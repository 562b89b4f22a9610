#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the eighteenth session's README: the seventeenth
# session's (bench/results/session17_2026-11-28/tables.sh: single-GPU and multi-GPU real runs,
# held-out sets ho10-ho18, the published-run tests), this session's held-out runs (ho19, one
# H200) and the Llama 3 405B published rows (test_published_llama3). Run from the repository
# root after building build/; no GPU. PLAN_PUBLISHED_RUNS names the published-runs CSV
# (default ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session17_2026-11-28/tables.sh $O
python3 bench/realruns/fidelity.py bench/results/ho19_2026-11-29/results.jsonl > $O/fidelity_ho19_1gpu.txt 2>&1
meson test -C build test_published_llama3 -v > $O/published_llama3.txt 2>&1
for f in $O/fidelity_ho19_1gpu.txt; do echo "== $f"; grep -E "^step|^memory|^feasib" $f | head -4; done
grep -E "^ *(llama3|meta)|rows" $O/published_llama3.txt | head -8
