#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the twenty-sixth session's README: the twenty-fifth
# session's (bench/results/session25_2026-11-29/tables.sh: single- and multi-GPU real runs,
# held-out sets ho10-ho26b, published runs) and this session's held-out set on one 2 x H200
# machine, ho27 (single-GPU lanes and a two-GPU phase). Run from the repository root after
# building build/; no GPU.
# PLAN_PUBLISHED_RUNS names the published-runs CSV (default ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session25_2026-11-29/tables.sh $O
H=bench/results/ho27_2026-11-29
python3 bench/realruns/fidelity.py $H/single.jsonl > $O/fidelity_ho27_1gpu.txt 2>&1
python3 bench/realruns/mgpu_fidelity.py $H/x2all > $O/mgpu_fidelity_ho27_2gpu.txt 2>&1
f=$O/fidelity_ho27_1gpu.txt; echo "== $f"; grep -A4 -- "-- all" $f | tail -4
f=$O/mgpu_fidelity_ho27_2gpu.txt; echo "== $f"; grep -A2 -- "-- all runs" $f | tail -2
