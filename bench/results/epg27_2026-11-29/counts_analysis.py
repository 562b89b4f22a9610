#!/usr/bin/env python3
"""Routing counts of the profiled EP 2 runs (device/counts, prun_measure.py counts_dump): per MoE
call, the rows each rank's experts received (max / mean over ranks: what every all-to-all waits
for) against the step-aggregated figure the records carry (ep_load_max_over_mean), and each
rank's per-expert max / mean (the grouped GEMM's group sizes). Standard library only.
Usage: counts_analysis.py [DIR]"""
import glob
import json
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "device", "counts")
for f0 in sorted(glob.glob(os.path.join(d, "*.r0.json"))):
    stem = f0[:-len("r0.json")]
    rs = [json.load(open(f)) for f in sorted(glob.glob(stem + "r*.json"))]
    r0 = rs[0]
    L, w, ep = r0["layers"], r0["warmup"], r0["ep"]
    first = w * L  # the timed steps' calls
    per_call, agg, per_expert = [], [0.0] * ep, []
    for i in range(first, len(r0["calls"])):
        recv = [sum(r["calls"][i][1]) for r in rs]
        per_call.append(max(recv) / (sum(recv) / ep))
        for j in range(ep):
            agg[j] += recv[j]
        for r in rs:
            El = len(r["calls"][i][1]) // ep
            pe = [sum(r["calls"][i][1][s * El + e] for s in range(ep)) for e in range(El)]
            per_expert.append(max(pe) / (sum(pe) / El))
    print("%s: %d timed calls (%d layers)" % (os.path.basename(stem.rstrip(".")), len(per_call), L))
    print("  rank load per call, max/mean: mean %.3f median %.3f max %.3f; step aggregate %.4f" % (
        statistics.mean(per_call), statistics.median(per_call), max(per_call), max(agg) / (sum(agg) / ep)))
    for l in range(L):
        print("    layer %d: %s" % (l, " ".join("%.3f" % per_call[s * L + l] for s in range(len(per_call) // L))))
    print("  per-expert rows on a rank, max/mean: median %.2f, range %.2f-%.2f" % (
        statistics.median(per_expert), min(per_expert), max(per_expert)))
