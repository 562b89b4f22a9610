#!/usr/bin/env python3
"""Sums plan estimate --ops output (text) per section and kind: GPU ms per micro-batch, fwd /
bwd / recompute, with the MoE routing kernels (moe.*) apart from the other elementwise ones.
Usage: plan_ops_sum.py OPS.txt"""
import re
import sys
sec = None
tot = {}
for ln in open(sys.argv[1]):
    if ln.startswith(("MoE layer", "dense layer", "loss head")):
        sec = ln.split("(")[0].strip()
        continue
    m = re.match(r"\s+(\S+)\s+(\w+)\s+(\w+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(.*)$", ln)
    if not m or sec is None or m.group(1) == "op":
        continue
    name, kind = m.group(1), m.group(2)
    if kind == "elementwise" and name.startswith("moe."):
        kind = "moe_routing"
    if kind == "gemm" and name == "experts":
        kind = "experts_gemm"
    d = tot.setdefault(sec, {}).setdefault(kind, [0.0, 0.0, 0.0])
    for i in range(3):
        d[i] += float(m.group(4 + i))
for sec, d in tot.items():
    print(sec)
    s = [0.0, 0.0, 0.0]
    for k, v in sorted(d.items()):
        print("  %-14s fwd %8.3f  bwd %8.3f  recompute %8.3f" % (k, *v))
        if k != "fsdp_gather":
            s = [a + b for a, b in zip(s, v)]
    print("  %-14s fwd %8.3f  bwd %8.3f  recompute %8.3f  (compute stream, fsdp_gather left out)" % ("sum", *s))
