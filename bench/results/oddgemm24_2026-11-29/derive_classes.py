#!/usr/bin/env python3
"""The output-width alignment classes' GEMM rates (data/systems/h200.json gpu.gemm_odd_out_*,
gpu.gemm_out_2mod4_*, gpu.gemm_out_4mod8_*) from granite24's measurement
(bench/results/granite24_2026-11-29/device/odd_vocab.jsonl: bench/realruns/odd_vocab_probe.py on
one H200, 2026-11-29 14:53 UTC, torch 2.11.0+cu130): for each GEMM of a Linear (fwd y = x W^T,
dgrad dy @ W, wgrad dy^T @ x) and each class of the out-features n (odd, 2 mod 4, 4 mod 8,
0 mod 8), the median over the shapes measured in that class of FLOPs / median time. No new
measurement. Standard library only."""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "granite24_2026-11-29", "device", "odd_vocab.jsonl")
rows = [json.loads(l) for l in open(DATA)]
g = [r for r in rows if r["section"] == "gemm"]
CLASSES = (("odd", lambda n: n % 2 == 1), ("2 mod 4", lambda n: n % 4 == 2),
           ("4 mod 8", lambda n: n % 8 == 4), ("0 mod 8", lambda n: n % 8 == 0))
for case in ("fwd", "dgrad", "wgrad"):
    for label, sel in CLASSES:
        sel_rows = [r for r in g if r["case"] == case and sel(r["n"])]
        if not sel_rows:
            print("%-6s %-8s not measured" % (case, label))
            continue
        xs = [r["flops_per_s"] for r in sel_rows]
        shapes = "; ".join("%dx%dx%d %.1f" % (r["tokens"], r["hidden"], r["n"],
                                              r["flops_per_s"] / 1e12) for r in sel_rows)
        print("%-6s %-8s median %6.1f TFLOP/s over %d shape(s) (%s)"
              % (case, label, statistics.median(xs) / 1e12, len(xs), shapes))
