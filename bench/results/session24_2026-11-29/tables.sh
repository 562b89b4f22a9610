#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the twenty-fourth session's README: the twenty-third
# session's (bench/results/session23_2026-11-29/tables.sh: single- and multi-GPU real runs, held-out
# sets ho10-ho24b, published runs) and this session's held-out runs on one 2 x H200 machine: ho25
# (single-GPU lanes and the two-GPU phase), ho25b (the same, run before any of the session's
# changes and seen by no helper) and ho25c (run after the first round, before the second). Run from the repository root after building build/; no GPU.
# PLAN_PUBLISHED_RUNS names the published-runs CSV (default ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session23_2026-11-29/tables.sh $O
for s in ho25 ho25b ho25c; do
  H=bench/results/${s}_2026-11-29
  python3 bench/realruns/fidelity.py $H/single.jsonl > $O/fidelity_${s}_1gpu.txt 2>&1
  python3 bench/realruns/mgpu_fidelity.py $H/x2all > $O/mgpu_fidelity_${s}_2gpu.txt 2>&1
done
for s in ho25 ho25b ho25c; do
  f=$O/fidelity_${s}_1gpu.txt; echo "== $f"; grep -E "^step|^memory|^reserved|^feasib" $f | head -4
  f=$O/mgpu_fidelity_${s}_2gpu.txt; echo "== $f"; grep -A2 -- "-- all runs" $f | tail -2
done
