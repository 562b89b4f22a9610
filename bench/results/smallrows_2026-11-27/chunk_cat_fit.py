#!/usr/bin/env python3
"""The H100 preset's chunk_cat host rates from host_probe.py's measurements (standard library):
host.chunk_cat_block_s = the median per-block time of the two small units (GPU busy, the
host with a lead, as in a GPU-bound backward), host.chunk_cat_block_large_s = the slope between
the two large units, host.chunk_cat_knee_blocks = where the two lines meet (the small rate up
to the knee, the large one past it reproduces the smaller large unit exactly).
Usage: python3 chunk_cat_fit.py [call2/host_probe.json]"""
import json
import os
import sys

fn = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "call2",
                                                        "host_probe.json")
d = json.load(open(fn))
cc = sorted(d["chunk_cat"], key=lambda r: r["blocks_2k"])
for r in cc:
    print("%-14s %9.0f blocks  idle %8.3f ms (%5.2f ns/block)  busy %8.3f ms (%5.2f ns/block)" % (
        r["unit"], r["blocks_2k"], r["idle_host_s"] * 1e3, r["idle_per_block_s"] * 1e9,
        r["busy_host_s"] * 1e3, r["busy_per_block_s"] * 1e9))
small = sorted(r["busy_per_block_s"] for r in cc[:2])
small = 0.5 * (small[0] + small[1])
a, b = cc[-2], cc[-1]
large = (b["busy_host_s"] - a["busy_host_s"]) / (b["blocks_2k"] - a["blocks_2k"])
knee = (large * a["blocks_2k"] - a["busy_host_s"]) / (large - small)
print("chunk_cat_block_s %.3g  chunk_cat_block_large_s %.3g  chunk_cat_knee_blocks %.0f" % (
    small, large, knee))
for r in cc:
    n = r["blocks_2k"]
    m = small * n if n <= knee else small * knee + large * (n - knee)
    print("  %-14s model %8.3f ms  measured (busy) %8.3f ms" % (r["unit"], m * 1e3, r["busy_host_s"] * 1e3))
