#!/usr/bin/env python3
"""Per-score cost of SDPA's dropout under transformers' explicit window mask, from
sdpa_mask_dropout.jsonl (bench/realruns/sdpa_dropout_probe.py --masks causal,window): for each
shape and mask, (time at dropout_p 0.1 - time at 0) / scores computed, forward and backward
(backward = fwd+bwd - fwd). Scores computed: causal b x q heads x s^2 / 2 (the causal kernel skips
the blocks above the diagonal); window b x q heads x s^2 (the masked kernel computes every block).
The window medians are data/systems/h200.json's gpu.sdpa_masked_dropout_{fwd,bwd}_s_per_score; the
causal rows repeat sdpadrop24's measurement (gpu.sdpa_dropout_*) on the same machine.
Usage: python3 derive_mask.py sdpa_mask_dropout.jsonl"""
import json
import statistics
import sys

rows = [json.loads(x) for x in open(sys.argv[1])]
med = {}
for r in rows:
    if r["dropout_p"] == 0:
        continue
    z = next(x for x in rows if x["dropout_p"] == 0 and
             all(x[k] == r[k] for k in ("model", "mask", "b", "s", "hq")))
    scores = r["b"] * r["hq"] * r["s"] ** 2 / (2 if r["mask"] == "causal" else 1)
    f = (r["fwd_s"] - z["fwd_s"]) / scores
    b = ((r["fwd_bwd_s"] - r["fwd_s"]) - (z["fwd_bwd_s"] - z["fwd_s"])) / scores
    med.setdefault(r["mask"], ([], []))
    med[r["mask"]][0].append(f)
    med[r["mask"]][1].append(b)
    print("%-10s %-6s b%d s%-5d  p0 fwd %.3f fwd+bwd %.3f ms  p0.1 fwd %.3f fwd+bwd %.3f ms  "
          "dropout fwd %.3e bwd %.3e s/score" % (r["model"], r["mask"], r["b"], r["s"], z["fwd_s"] * 1e3,
                                                 z["fwd_bwd_s"] * 1e3, r["fwd_s"] * 1e3, r["fwd_bwd_s"] * 1e3, f, b))
for m, (fw, bw) in med.items():
    print("%-6s median fwd %.4e  bwd %.4e s/score (fwd %.3e-%.3e, bwd %.3e-%.3e)" % (
        m, statistics.median(fw), statistics.median(bw), min(fw), max(fw), min(bw), max(bw)))
