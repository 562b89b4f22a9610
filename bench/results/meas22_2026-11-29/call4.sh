#!/bin/bash
# meas22 call 4 (the MoE masked_fill items on the offset kernel): runs4.tsv, LIMIT 11 s.
set -u
D=.carry/meas22
cp "$D/runs4.tsv" "$D/runs.tsv"
D=$D LIMIT=${LIMIT:-11} bash "$D/meas22_run.sh"
