#!/bin/sh
# The eight multi-GPU fidelity tables of the tenth session's list (bench/results/session10_2026-11-28:
# 41, heldout14, heldout16_mgpu8, mgpu9_7, ho10, tt10, moe10, fid10) and tp11's own runs, each `python3
# bench/realruns/mgpu_fidelity.py` over the same folders, written to OUTDIR/mgpu_fidelity_<set>.txt.
# Why: helper tp11 (issues 14, 19) compares every table before and after its cost-model change.
# Usage (repository root, after ninja -C build): sh bench/tp11_fidelity_all.sh OUTDIR [--plan BIN]
set -e
O=$1; shift
R=bench/results
F="python3 bench/realruns/mgpu_fidelity.py $*"
mkdir -p "$O"
$F $R/heldout_2026-11-27/h200x4 $R/heldout_2026-11-27/h200x4_cp_prof $R/mgpu_2026-11-27/full_h200x4/jobs \
   $R/mgpu_2026-11-27/extra_h100x4/jobs $R/mgpu_2026-11-27/smoke2_h200x4/jobs $R/heldout2_2026-11-27/h200x4 \
   $R/cp_ring_host_2026-11-27/heldout > "$O/mgpu_fidelity_41.txt"
$F $R/tphost_2026-11-27/heldout $R/epstep_2026-11-27/heldout $R/pp_timeline_2026-11-27 > "$O/mgpu_fidelity_heldout14.txt"
$F bench/realruns/results/mgpu8_h100x4_2026-11-28 > "$O/mgpu_fidelity_heldout16_mgpu8.txt"
$F $R/mgpu9_2026-11-28/call1_h100x4/jobs > "$O/mgpu_fidelity_mgpu9_7.txt"
$F $R/ho10_2026-11-28/h200x4/mgpu9-work/jobs > "$O/mgpu_fidelity_ho10.txt"
$F $R/tt10_2026-11-28/call1_h100x4 > "$O/mgpu_fidelity_tt10.txt"
$F $R/moe10_2026-11-28/call1_h100x4/jobs $R/moe10_2026-11-28/call2_h100x4/jobs > "$O/mgpu_fidelity_moe10.txt"
$F $R/fid10_2026-11-28/call1_h100x4 > "$O/mgpu_fidelity_fid10.txt"
# and tp11's own runs (this session's two H200 x4 hosts: the TP rows again, GPU-free compiled steps)
$F $R/tp11_2026-11-28/call1_h200x4/jobs $R/tp11_2026-11-28/call2_h200x4/jobs > "$O/mgpu_fidelity_tp11.txt"
for f in "$O"/mgpu_fidelity_*.txt; do
  printf '%s  ' "$(basename "$f" .txt)"; grep -m1 "step: estimate vs real" "$f" || echo
done
