#!/usr/bin/env python3
"""beside_classes.py — each eager kernel class's rate in the 4-GPU FSDP2 step of Llama-3.1-8B
(where gpu.eager_elementwise_efficiency 0.51 was measured) over its rate alone on one H200
(gpu.eager_elementwise_efficiency_alone 0.62), from the profiled kernel lists bench/ew_classes.py
reads (bench/results/fsdp2_kernels_8b_h200x4.tsv, eager_kernels_2layers_h200.tsv).

Why: to tell whether the step's lower rate is its kernel mix or its kernels running slower beside
NCCL's collectives, and which kernels (where in the layer) are slowed. No GPU.

Usage: python3 bench/results/apertus2r25_2026-11-29/beside_classes.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import ew_classes as e  # noqa: E402

PEAK = 4.8e12
res = {run: {r[0]: r for r in e.derive(f, u)} for run, f, u in e.RUNS}
step, alone = res["8b_step_h200x4"], res["2layers_alone_h200"]
print("%-58s %9s %9s %8s %8s %6s" % ("kernel (ew_classes.py)", "step TB/s", "alone", "step GB",
                                      "step ms", "ratio"))
b = s = s_alone = 0.0
for k, r in step.items():
    if k not in alone:
        continue
    ra, rb = r[3] / r[4], alone[k][3] / alone[k][4]
    print("%-58s %9.2f %9.2f %8.2f %8.2f %6.3f" % (k[:58], ra / 1e12, rb / 1e12, r[3] / 1e9,
                                                r[4] * 1e3, ra / rb))
    if "SoftMax" in k:  # priced apart (softmax_rows.c), as bench/eager_rates.py leaves them out
        continue
    b += r[3]
    s += r[4]
    s_alone += r[3] / rb
print("the step's kernels (log_softmax out): %.3f of peak in the step, %.3f at each class's "
      "alone rate: the mix accounts for %.3f -> %.3f (the presets' _alone), contention for "
      "%.3f -> %.3f" % (b / s / PEAK, b / s_alone / PEAK, 0.624, b / s_alone / PEAK,
                        b / s_alone / PEAK, b / s / PEAK))
