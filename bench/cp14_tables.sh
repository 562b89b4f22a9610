#!/bin/bash
# usage: cp14_tables.sh OUTDIR
D=$1; mkdir -p $D; M="nice python3 bench/realruns/mgpu_fidelity.py"
$M bench/results/heldout_2026-11-27/h200x4 bench/results/heldout_2026-11-27/h200x4_cp_prof bench/results/mgpu_2026-11-27/{full_h200x4,extra_h100x4,smoke2_h200x4}/jobs bench/results/heldout2_2026-11-27/h200x4 bench/results/cp_ring_host_2026-11-27/heldout > $D/mgpu_41.txt 2>&1
$M bench/results/tphost_2026-11-27/heldout bench/results/epstep_2026-11-27/heldout bench/results/pp_timeline_2026-11-27 > $D/mgpu_heldout14.txt 2>&1
$M bench/realruns/results/mgpu8_h100x4_2026-11-28 > $D/mgpu8.txt 2>&1
$M bench/results/mgpu9_2026-11-28/call1_h100x4/jobs > $D/mgpu9.txt 2>&1
$M bench/results/moe10_2026-11-28/call1_h100x4/jobs bench/results/moe10_2026-11-28/call2_h100x4/jobs > $D/moe10.txt 2>&1
$M bench/results/tt10_2026-11-28/call1_h100x4 > $D/tt10.txt 2>&1
$M bench/results/fid10_2026-11-28/call1_h100x4 > $D/fid10.txt 2>&1
$M bench/results/ho10_2026-11-28/h200x4/mgpu9-work/jobs > $D/ho10.txt 2>&1
$M bench/results/ho11_2026-11-28/h200x2/jobs bench/results/ho11_2026-11-28/h200x2_b/jobs bench/results/ho11_2026-11-28/h200x4/jobs > $D/ho11.txt 2>&1
$M bench/results/ho12_2026-11-28/h200x2/jobs > $D/ho12_x2.txt 2>&1
$M bench/results/ho13_2026-11-28/two_h200/jobs > $D/ho13_x2.txt 2>&1
$M bench/results/tt13_2026-11-28/call1_h200x2 bench/results/tt13_2026-11-28/call3_h200x2 bench/results/tt13_2026-11-28/lead_hostsplit > $D/tt13.txt 2>&1
$M bench/results/meas10_2026-11-28/next_h200x4 > $D/meas10.txt 2>&1
echo done
