#!/bin/bash
# meas22_run.sh — issue 14: `plan measure` of the single-GPU H200 real runs of make_runs.py's
# list, one process per run: meas12's runner (bench/results/meas12_2026-11-28/meas12_run.sh) with
# NAME=meas22 and 30 s a run. Run from the repository root of the GPU machine's tree; D (default
# .carry/meas22) holds plan, plan-gpu, runs.tsv and configs/; LIMIT as there. Writes $OUT/meas22.tgz.
# When carried without the repository's bench/results, copy meas12_run.sh beside this file.
HERE=$(cd "$(dirname "$0")" && pwd)
RUNNER=$HERE/meas12_run.sh
[ -f "$RUNNER" ] || RUNNER=bench/results/meas12_2026-11-28/meas12_run.sh
NAME=meas22 RUN_TIMEOUT=30 exec bash "$RUNNER"
