#!/bin/bash
# meas22 call 3 (after commit 09d80b7, the measure JSON's per_step fix): runs3.tsv, LIMIT 15 s.
set -u
D=.carry/meas22
cp "$D/runs3.tsv" "$D/runs.tsv"
D=$D LIMIT=${LIMIT:-15} bash "$D/meas22_run.sh"
