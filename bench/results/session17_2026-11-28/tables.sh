#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the seventeenth session's README: the sixteenth
# session's (bench/results/session16_2026-11-28/tables.sh: the single-GPU and multi-GPU real-run
# tables, the held-out sets ho10-ho17, the published-run tests) and this session's held-out runs
# (ho18: 2 x H200 and one H200). Run from the repository root after building build/; no GPU.
# PLAN_PUBLISHED_RUNS names the published-runs CSV (default ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session16_2026-11-28/tables.sh $O
python3 bench/realruns/mgpu_fidelity.py bench/results/ho18_2026-11-28/x2/jobs > $O/mgpu_fidelity_ho18_x2.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho18_2026-11-28/one_h200/results.jsonl > $O/fidelity_ho18_1gpu.txt 2>&1
for f in $O/*ho18*.txt; do echo "== $f"; grep -E "^step|^memory|median" $f | head -4; done
