#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the twenty-fifth session's README: the twenty-fourth
# session's (bench/results/session24_2026-11-29/tables.sh: single- and multi-GPU real runs, held-out
# sets ho10-ho25c, published runs) and this session's held-out runs on one 4 x H200 machine: ho26
# (four- and two-GPU torchtitan and Hugging Face FSDP2 rows) and, once run, ho26b. Run from the
# repository root after building build/; no GPU.
# PLAN_PUBLISHED_RUNS names the published-runs CSV (default ../shared/data/published_runs.csv).
set -u
O=$1; mkdir -p $O
bash bench/results/session24_2026-11-29/tables.sh $O
for s in ho26 ho26b; do
  H=bench/results/${s}_2026-11-29
  [ -d $H/x4all ] || continue
  python3 bench/realruns/mgpu_fidelity.py $H/x4all > $O/mgpu_fidelity_${s}_x4.txt 2>&1
  f=$O/mgpu_fidelity_${s}_x4.txt; echo "== $f"; grep -A2 -- "-- all runs" $f | tail -2
done
