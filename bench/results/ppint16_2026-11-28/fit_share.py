#!/usr/bin/env python3
"""Per (stage, kind), least-squares d = d0 (1 + k share) over every timed op of interleaved runs
(share: pending_p2p.py's fraction of the op under a waiting p2p op of its rank). The first forward
of each chunk (micro-batch 0: FSDP's unshard copies) and the last stage's ops are left out.
Usage: python3 fit_share.py RESULTS.jsonl [...]"""
import json
import statistics
import sys
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from pending_p2p import windows, overlap  # noqa: E402
from pp_torch_order import torch_order, lower  # noqa: E402

for fn in sys.argv[1:]:
    for ln in open(fn):
        r = json.loads(ln)
        if r.get("schedule") != "interleaved1f1b" or "timeline" not in r:
            continue
        p, v, m = r["pp"], r["vpp"], r["microbatches"]
        low = lower([torch_order(p, v, m, k) for k in range(p)], p, v)
        g = {}
        for s in range(len(r["timeline"][0])):
            times = {(k, st, mb): (t0, t1) for rk in range(p) for k, st, mb, t0, t1 in r["timeline"][rk][s]}
            w = windows(low, times, p, v)
            for rk in range(p):
                for k, st, mb, t0, t1 in r["timeline"][rk][s]:
                    if (k == "F" and mb == 0) or st == p * v - 1:
                        continue
                    g.setdefault((st, k), []).append((overlap(t0, t1, w[rk]), t1 - t0))
        ks = []
        print("%s (%s):" % (r["label"], r["gpu"]))
        for key, xs in sorted(g.items()):
            n = len(xs)
            mx = sum(a for a, _ in xs) / n
            my = sum(b for _, b in xs) / n
            sxx = sum((a - mx) ** 2 for a, _ in xs)
            if sxx < 1e-6:
                continue
            b = sum((a - mx) * (y - my) for a, y in xs) / sxx
            a0 = my - b * mx
            ks.append(b / a0)
            print("  stage %d %s: n %d, d0 %.2f ms, slope %.2f ms per unit share, k = %.3f" % (key[0], key[1], n, a0, b, b / a0))
        if ks:
            print("  median k %.3f  (132 SMs with 32 held by a waiting NCCL p2p kernel: 132/100 - 1 = 0.320)" % statistics.median(ks))
