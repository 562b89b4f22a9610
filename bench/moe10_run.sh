#!/bin/bash
# Device-machine driver of branch moe10 (issue 20; bench/results/moe10_2026-11-28/README.md): machine
# facts, the EP runs of bench/realruns/runs_moe10.txt (host- vs device-built expert permutation)
# through mgpu_driver.py, the profiled run summarized (trace_ops.py). Packs $OUT/moe10.tgz and the
# gzipped traces while the pack stays under ~18 MB.
# Usage on the device (repository root): C=.carry/moe10 OUT=... bash .carry/moe10/bench/moe10_run.sh DEADLINE_S
set -u
# the same driver as bench/mgpu9_run.sh, named moe10 (its work folder, pack and default jobs file)
C=${C:-.carry/moe10}
NAME=moe10 C=$C exec bash $C/bench/mgpu9_run.sh "$@"
