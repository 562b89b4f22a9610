#!/usr/bin/env python3
"""Per-score cost of SDPA's dropout from sdpa_dropout.jsonl (bench/realruns/sdpa_dropout_probe.py):
for each shape, (time at dropout_p 0.1 - time at 0) / scores computed, forward and backward
(backward = fwd+bwd - fwd), scores = b x q heads x s^2 / 2 (causal); the medians over the shapes
are data/systems/h200.json's gpu.sdpa_dropout_{fwd,bwd}_s_per_score.
Usage: python3 derive.py sdpa_dropout.jsonl"""
import json
import statistics
import sys

rows = [json.loads(x) for x in open(sys.argv[1])]
fw, bw = [], []
for r in rows:
    if r["dropout_p"] == 0:
        continue
    z = next(x for x in rows if x["dropout_p"] == 0 and all(x[k] == r[k] for k in ("model", "b", "s", "hq")))
    scores = r["b"] * r["hq"] * r["s"] ** 2 / 2
    f = (r["fwd_s"] - z["fwd_s"]) / scores
    b = ((r["fwd_bwd_s"] - r["fwd_s"]) - (z["fwd_bwd_s"] - z["fwd_s"])) / scores
    fw.append(f)
    bw.append(b)
    print("%-10s b%d s%-5d  fwd %.3e s/score  bwd %.3e s/score" % (r["model"], r["b"], r["s"], f, b))
print("median fwd %.4e  bwd %.4e" % (statistics.median(fw), statistics.median(bw)))
