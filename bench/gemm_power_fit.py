#!/usr/bin/env python3
"""Fits the GEMM power-headroom model (costmodel/gemm_headroom.h) to bench/gemm_power_mix.py's points.

For each point where GEMM blocks alternate with a filler of GPU-side idle or memory-bound
kernels, the measured GEMM time fraction d (at the boosted rate) and the rate multiplier
r = (median TFLOP/s in the pattern) / (the same shape back to back) satisfy, when the board holds
its cap,   r = min(r_max, x^beta),  x = (P_cap - (1 - d) P_filler) / (d P_cap)
(energy over the window at the cap, GEMM power ~ r^(1/beta)). P_cap is the enforced limit, the
idle power is measured (idle points' filler), r_max the median multiplier of the points at the
highest clock; beta and the memory-bound kernels' effective power under the cap are fitted by
least squares on log r over a grid (0.01 in beta, 10 W). Prints the fit, its rms error and every
point with its prediction; the "mix" points (half idle, half memory-bound, time split not
measured) and the Llama layer rows are printed as checks, not fitted.

Usage: python3 bench/gemm_power_fit.py [bench/results/duty_2026-11-27]
"""
import json
import math
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results",
                                                       "duty_2026-11-27")
pts = [json.loads(x) for x in open(os.path.join(d, "points.jsonl"))]
env = json.load(open(os.path.join(d, "env.json")))
cap = env["power_limit_w"]
alone = {p["label"][len("gemm_"):]: p["tflops_mean"] for p in pts
         if p["kind"] == "alone" and p["label"].startswith("gemm_")}
p_idle = statistics.fmean(p["power_w_energy"] for p in pts
                          if p["kind"] == "alone" and p["label"] in ("nothing_queued", "idle_spin_kernel"))
p_mem_alone = statistics.fmean(p["power_w_energy"] for p in pts
                               if p["kind"] == "alone" and p["label"].startswith("mem_") and p["label"] != "mem_mixed3")
rows = []
for p in pts:
    if p["kind"] != "pattern":
        continue
    rows.append((p["label"], p["filler"], p["duty_measured"], p["tflops_median"] / alone[p["shape"]],
                 p.get("sm_clock_mhz_median")))
r_max = statistics.median(r for _, f, _, r, clk in rows if clk and clk >= 1900)


def pred(dd, p_o, beta):
    x = (cap - (1 - dd) * p_o) / (dd * cap)
    return 1.0 if x <= 1 else min(r_max, x ** beta)


fit = [r for r in rows if r[1] in ("idle", "mem")]
best = None
for p_mem in range(300, 560, 10):
    for b100 in range(20, 70):
        beta = b100 / 100
        e = sum((math.log(pred(dd, p_idle if f == "idle" else p_mem, beta)) - math.log(r)) ** 2
                for _, f, dd, r, _ in fit)
        if best is None or e < best[0]:
            best = (e, p_mem, beta)
_, p_mem, beta = best
rel = [pred(dd, p_idle if f == "idle" else p_mem, beta) / r - 1 for _, f, dd, r, _ in fit]
print("cap %.0f W, idle %.1f W (measured), memory-bound alone %.1f W (measured, unconstrained clock)"
      % (cap, p_idle, p_mem_alone))
print("fit over %d points: beta %.2f, memory-bound power under the cap %d W, r_max %.3f; "
      "rms rel error %.2f%%, max %.2f%%" % (len(fit), beta, p_mem, r_max,
                                           100 * math.sqrt(statistics.fmean(e * e for e in rel)),
                                           100 * max(abs(e) for e in rel)))
print("%-44s %6s %6s %6s" % ("point", "duty", "meas", "model"))
for lab, f, dd, r, _ in rows:
    p_o = p_idle if f == "idle" else p_mem if f == "mem" else 0.5 * (p_idle + p_mem)
    print("%-44s %6.3f %6.3f %6.3f%s" % (lab, dd, r, pred(dd, p_o, beta), "" if f != "mix" else "  (check)"))
for p in pts:
    if p["kind"] == "layer":
        b2b = next(q["tflops_mean"] for q in pts if q["label"] == p["label"] + "_gemms_back_to_back")
        print("%-44s duty %.3f: GEMMs %.1f TFLOP/s in the layer, %.1f back to back (x%.3f), "
              "%.0f W" % (p["label"], p["duty_measured"], p["gemm_tflops"], b2b,
                          p["gemm_tflops"] / b2b, p["power_w_energy"]))
