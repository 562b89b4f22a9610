# the EP rows of every multi-GPU table, ho27/ho27b and epg27 included (epg27 ep_rows.sh plus those three folders)
M=bench/realruns/mgpu_fidelity.py
{
python3 $M bench/results/heldout_2026-11-27/h200x4 bench/results/heldout_2026-11-27/h200x4_cp_prof bench/results/mgpu_2026-11-27/{full_h200x4,extra_h100x4,smoke2_h200x4}/jobs bench/results/heldout2_2026-11-27/h200x4 bench/results/cp_ring_host_2026-11-27/heldout
python3 $M bench/results/ho10_2026-11-28/h200x4/mgpu9-work/jobs
python3 $M bench/results/ho11_2026-11-28/h200x2/jobs bench/results/ho11_2026-11-28/h200x2_b/jobs bench/results/ho11_2026-11-28/h200x4/jobs bench/results/ho11_2026-11-28/h200x4_clipfix/jobs
for d in ho12_2026-11-28/h200x2/jobs ho13_2026-11-28/two_h200/jobs ho14_2026-11-28/two_h200/jobs ho15_2026-11-28/x4/jobs ho17_2026-11-28/x4/jobs ho18_2026-11-28/x2/jobs ho22_2026-11-29/x2/jobs ho25_2026-11-29/x2all ho25b_2026-11-29/x2all ho25c_2026-11-29/x2all prof26_2026-11-29 ho26_2026-11-29/x4all ho26b_2026-11-29/x4all ep26_2026-11-29/device_run epg27_2026-11-29/device ho27_2026-11-29/x2all ho27b_2026-11-29/x2all moe10_2026-11-28/call1_h100x4/jobs moe10_2026-11-28/call2_h100x4/jobs tphost_2026-11-27/heldout epstep_2026-11-27/heldout; do python3 $M bench/results/$d; done
} 2>&1 | grep -E " ep(\+efsdp)? " | sort -u
