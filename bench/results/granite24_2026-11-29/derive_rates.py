#!/usr/bin/env python3
"""The odd-width output layer's GEMM rates (data/systems/h200.json gpu.gemm_odd_out_*) from
device/odd_vocab.jsonl (bench/realruns/odd_vocab_probe.py on one H200): for each of the three
GEMMs (fwd y = x W^T, dgrad dy @ W, wgrad dy^T @ x), the median over the three odd shapes
(tokens 4096 and 8192 x hidden 4096 x 49155; 8192 x 2048 x 32001) of FLOPs / median time;
beside them the aligned and the even-unaligned widths' rates. Standard library only."""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
rows = [json.loads(l) for l in open(os.path.join(HERE, "device", "odd_vocab.jsonl"))]
g = [r for r in rows if r["section"] == "gemm"]
for case in ("fwd", "dgrad", "wgrad"):
    for label, sel in (("odd", lambda n: n % 2 == 1), ("even, not a multiple of 8",
                                                         lambda n: n % 2 == 0 and n % 8),
                       ("multiple of 8", lambda n: n % 8 == 0)):
        xs = [r["flops_per_s"] for r in g if r["case"] == case and sel(r["n"])]
        shapes = ["%dx%dx%d %.1f" % (r["tokens"], r["hidden"], r["n"], r["flops_per_s"] / 1e12)
                  for r in g if r["case"] == case and sel(r["n"])]
        print("%-6s %-26s median %6.1f TFLOP/s  (%s)" % (case, label, statistics.median(xs) / 1e12,
                                                         "; ".join(shapes)))
for r in rows:
    if r["section"] == "model":
        print("GraniteForCausalLM 2 layers b2 s4096 n %d: step %.1f ms" % (r["n"], 1e3 * r["step_s"]))
