#!/bin/bash
# tables.sh OUTDIR — every fidelity table of the session's README, written into OUTDIR: the
# single-GPU and multi-GPU real-run tables (bench/realruns/fidelity.py, mgpu_fidelity.py over each
# folder of real runs; the 41-run table's plan measure column from the latest measure files, --pm),
# the held-out runs of the fifteenth (ho15), sixteenth (ho17) and seventeenth (ho18) sessions, sactp16's TP + SAC runs, and the
# published-run tests. Run from the
# repository root after building build/; no GPU. PLAN_PUBLISHED_RUNS names the published-runs CSV
# (default ../shared/data/published_runs.csv beside the checkout).
set -u
O=$1; mkdir -p $O
M=bench/realruns/mgpu_fidelity.py
python3 bench/realruns/fidelity.py > $O/fidelity_1gpu.txt 2>&1
python3 $M bench/results/heldout_2026-11-27/h200x4 bench/results/heldout_2026-11-27/h200x4_cp_prof bench/results/mgpu_2026-11-27/{full_h200x4,extra_h100x4,smoke2_h200x4}/jobs bench/results/heldout2_2026-11-27/h200x4 bench/results/cp_ring_host_2026-11-27/heldout --pm bench/results/meas10_2026-11-28/{before_h100x4,after_h100x4,next_h200x4} bench/results/meas13_2026-11-28/{pm_h200x2,pm_h200x2_acc} > $O/mgpu_fidelity_41.txt 2>&1
python3 $M bench/results/tphost_2026-11-27/heldout bench/results/epstep_2026-11-27/heldout bench/results/pp_timeline_2026-11-27 > $O/mgpu_fidelity_heldout14.txt 2>&1
python3 $M bench/realruns/results/mgpu8_h100x4_2026-11-28 > $O/mgpu_fidelity_heldout16_mgpu8.txt 2>&1
python3 $M bench/results/mgpu9_2026-11-28/call1_h100x4/jobs > $O/mgpu_fidelity_mgpu9_7.txt 2>&1
python3 $M bench/results/moe10_2026-11-28/call1_h100x4/jobs bench/results/moe10_2026-11-28/call2_h100x4/jobs > $O/mgpu_fidelity_moe10.txt 2>&1
python3 $M bench/results/tt10_2026-11-28/call1_h100x4 > $O/mgpu_fidelity_tt10.txt 2>&1
python3 $M bench/results/fid10_2026-11-28/call1_h100x4 > $O/mgpu_fidelity_fid10.txt 2>&1
python3 $M bench/results/ho10_2026-11-28/h200x4/mgpu9-work/jobs > $O/mgpu_fidelity_ho10.txt 2>&1
python3 $M bench/results/ho11_2026-11-28/h200x2/jobs bench/results/ho11_2026-11-28/h200x2_b/jobs bench/results/ho11_2026-11-28/h200x4/jobs bench/results/ho11_2026-11-28/h200x4_clipfix/jobs > $O/mgpu_fidelity_ho11.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho12_2026-11-28/h200x1/results.jsonl > $O/fidelity_ho12_1gpu.txt 2>&1
python3 $M bench/results/ho12_2026-11-28/h200x2/jobs > $O/mgpu_fidelity_ho12_2gpu.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho13_2026-11-28/one_h200/results.jsonl > $O/fidelity_ho13_1gpu.txt 2>&1
python3 $M bench/results/ho13_2026-11-28/two_h200/jobs > $O/mgpu_fidelity_ho13_2gpu.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho14_2026-11-28/one_h200/results.jsonl > $O/fidelity_ho14_1gpu.txt 2>&1
python3 $M bench/results/ho14_2026-11-28/two_h200/jobs > $O/mgpu_fidelity_ho14_2gpu.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/sac14_2026-11-28/steps.jsonl > $O/fidelity_sac14.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/compiled13_2026-11-28/outofsample/results.jsonl > $O/fidelity_compiled13.txt 2>&1
python3 $M bench/results/tpck14_2026-11-28/call1_h200x2 bench/results/tpck14_2026-11-28/call2_h200x2 > $O/mgpu_fidelity_tpck14.txt 2>&1
python3 $M bench/results/ho15_2026-11-28/x4/jobs > $O/mgpu_fidelity_ho15_x4.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho15_2026-11-28/one_h200/results.jsonl > $O/fidelity_ho15_1gpu.txt 2>&1
python3 $M bench/results/sactp16_2026-11-28/x2/jobs > $O/mgpu_fidelity_sactp16.txt 2>&1
python3 $M bench/results/ho17_2026-11-28/x4/jobs > $O/mgpu_fidelity_ho17_x4.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho17_2026-11-28/one_h200/results.jsonl > $O/fidelity_ho17_1gpu.txt 2>&1
python3 $M bench/results/ho18_2026-11-28/x2/jobs > $O/mgpu_fidelity_ho18_x2.txt 2>&1
python3 bench/realruns/fidelity.py bench/results/ho18_2026-11-28/one_h200/results.jsonl > $O/fidelity_ho18_1gpu.txt 2>&1
for t in test_published_h100 test_published_blackwell test_golden test_published_torchtitan; do PLAN_PUBLISHED_RUNS=${PLAN_PUBLISHED_RUNS:-$(pwd)/../shared/data/published_runs.csv} meson test -C build $t -v 2>&1; done > $O/published.txt
for f in $O/*.txt; do echo "== $f"; grep -E "^step|^memory|median" $f | head -4; done
