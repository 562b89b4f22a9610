#!/bin/bash
# meas26: after the device call. Unpacks the call's meas26.tgz into the results folder, copies the
# pm files of rows whose real run repeats a measured layout (same flags) under their labels, and
# writes the tables. Run from the repository root after building build/.
# Usage: bash bench/meas26_post.sh PATH/TO/meas26.tgz
set -eu
D=bench/results/meas26_2026-11-29
mkdir -p $D/call && tar xzf $1 -C $D/call
S=$D/same_layout; mkdir -p $S
# label of a real run -> label of the measured run with the same plan measure flags
while read -r to from; do
  [ -f $D/call/base/pm-$from.json ] && cp $D/call/base/pm-$from.json $S/pm-$to.json || true
done <<'PAIRS'
prof26-tp2dp2-ckpt-l31-8bL8-s4k-b2 ho17-tp2dp2-ckpt-l31-8bL8-s4k-b2
prof26-ep4-loop-q3moeL4-s4k-b2 ho17-ep4-loop-q3moeL4-s4k-b2
cp4-l1b-s32k-prof cp4-l1b-s32k
s2-tp2dp2-r15 s2-tp2dp2
PAIRS
python3 bench/meas26_table.py --plan build/cli/plan --after $D/call/base $S --fix $D/call/fix > $D/table.md
M=bench/realruns/mgpu_fidelity.py R=bench/results
PM="$R/meas10_2026-11-28/before_h100x4 $R/meas10_2026-11-28/after_h100x4 $R/meas10_2026-11-28/next_h200x4 $R/meas13_2026-11-28/pm_h200x2 $R/meas13_2026-11-28/pm_h200x2_acc"
python3 $M $R/heldout_2026-11-27/h200x4 $R/heldout_2026-11-27/h200x4_cp_prof $R/mgpu_2026-11-27/{full_h200x4,extra_h100x4,smoke2_h200x4}/jobs $R/heldout2_2026-11-27/h200x4 $R/cp_ring_host_2026-11-27/heldout --pm $PM $D/call/base $S > $D/mgpu_fidelity_41_pm_after.txt 2>&1
python3 $M $R/ho15_2026-11-28/x4/jobs --pm $D/call/base $S > $D/mgpu_fidelity_ho15_x4_pm_after.txt 2>&1
python3 $M $R/ho17_2026-11-28/x4/jobs --pm $D/call/base $S > $D/mgpu_fidelity_ho17_x4_pm_after.txt 2>&1
python3 $M $R/prof26_2026-11-29 --pm $D/call/base $S > $D/mgpu_fidelity_prof26_pm_after.txt 2>&1
