#!/bin/bash
# pprows_sim.sh DATA_DIR > rows.json — mgpu_fidelity.py --format json over every multi-GPU folder of
# tables.sh, priced through simwrap.py (pipelined rows: the step simulator's step). Summarise with
# rows_json_summary.py (closed form: the same with a plain plan, or the tables' text via pp_rows.py).
D=$1; shift
export SIMWRAP_DATA=$D

cd "$(dirname "$0")/../../.."
M="python3 bench/realruns/mgpu_fidelity.py --plan bench/results/pp21_2026-11-29/simwrap.py --format json"
R=bench/results
for dirs in "$R/heldout_2026-11-27/h200x4 $R/heldout_2026-11-27/h200x4_cp_prof $R/mgpu_2026-11-27/full_h200x4/jobs $R/mgpu_2026-11-27/extra_h100x4/jobs $R/mgpu_2026-11-27/smoke2_h200x4/jobs $R/heldout2_2026-11-27/h200x4 $R/cp_ring_host_2026-11-27/heldout" \
 "bench/realruns/results/mgpu8_h100x4_2026-11-28" "$R/fid10_2026-11-28/call1_h100x4" "$R/ho10_2026-11-28/h200x4/mgpu9-work/jobs" \
 "$R/ho11_2026-11-28/h200x2/jobs $R/ho11_2026-11-28/h200x2_b/jobs $R/ho11_2026-11-28/h200x4/jobs $R/ho11_2026-11-28/h200x4_clipfix/jobs" \
 "$R/ho12_2026-11-28/h200x2/jobs" "$R/ho13_2026-11-28/two_h200/jobs" "$R/ho14_2026-11-28/two_h200/jobs" "$R/ho15_2026-11-28/x4/jobs" "$R/ho17_2026-11-28/x4/jobs" \
 "$R/mgpu9_2026-11-28/call1_h100x4/jobs" "$R/moe10_2026-11-28/call1_h100x4/jobs $R/moe10_2026-11-28/call2_h100x4/jobs" "$R/sactp16_2026-11-28/x2/jobs" \
 "$R/tpck14_2026-11-28/call1_h200x2 $R/tpck14_2026-11-28/call2_h200x2" "$R/tphost_2026-11-27/heldout $R/epstep_2026-11-27/heldout $R/pp_timeline_2026-11-27" \
 "$R/tt10_2026-11-28/call1_h100x4" "$R/ho18_2026-11-28/x2/jobs"; do
  $M $dirs 2>/dev/null
done
