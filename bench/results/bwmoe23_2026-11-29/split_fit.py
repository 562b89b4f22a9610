#!/usr/bin/env python3
"""split_fit.py — the GPU cost of splitting a bandwidth-bound kernel into one launch per local
expert, from bench/bwmoe23_moe_pieces.py's graph-replayed measurement (call2/pieces.json):
per shape set, an in-place bf16 scale of fc1's input [E x M, h] as E launches (split_e_g_s) and
as one (split_1_g_s). Per extra launch: (split_e - split_1) / (E - 1), against the traffic of
one launch (read + write of an M x h bf16 chunk). A least-squares line through the six points
gives a fixed cost per launch and a cost per byte of the launch's traffic (the split kernels'
lower rate); costmodel/mcore_expert_gemm.c prices TE's per-expert quantize launches with both
(gpu.expert_split_launch_s, gpu.expert_split_bytes_per_s).
Usage: python3 bench/results/bwmoe23_2026-11-29/split_fit.py [pieces.json]"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
j = json.load(open(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "call2", "pieces.json")))
xs, ys = [], []
print(f"{'set':42s} {'E':>3s} {'traffic MB':>10s} {'one TB/s':>8s} {'split TB/s':>10s} {'extra us':>8s}")
for r in j["experts"]:
    E = r["E"]
    traffic = 2 * 2 * r["M"] * r["h"]  # read + write, bf16, one expert's chunk
    extra = (r["split_e_g_s"] - r["split_1_g_s"]) / (E - 1)
    xs.append(traffic)
    ys.append(extra)
    print(f"{r['name']:42s} {E:3d} {traffic / 1e6:10.1f} {r['split_bytes'] / r['split_1_g_s'] / 1e12:8.2f} "
          f"{r['split_bytes'] / r['split_e_g_s'] / 1e12:10.2f} {extra * 1e6:8.2f}")
n = len(xs)
mx, my = sum(xs) / n, sum(ys) / n
slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
icpt = my - slope * mx
print(f"\nextra per launch = {icpt * 1e6:.3f} us + traffic / {1 / slope / 1e12:.2f} TB/s")
for x, y in zip(xs, ys):
    print(f"  traffic {x / 1e6:7.1f} MB: measured {y * 1e6:6.2f} us, line {(icpt + slope * x) * 1e6:6.2f} us")
