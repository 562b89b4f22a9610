#!/usr/bin/env python3
"""Is the published CP step affine in the CP degree? (issue 19, ttcp20)

Every ring-attention cost the model knows grows like c or c - 1 at a fixed number of tokens per
GPU (the rank's SDPA calls, merges, the K/V all-gather's received bytes, the dK/dV exchanges), so
along Table 2 / Table 6 (32k tokens a GPU at every CP degree) any sum of them gives a step
a + b c, whose differences over CP 1->2, 2->4, 4->8 stand 1 : 2 : 4. This prints those
differences for the published rows and for plan's estimate (the test's output, saved beside this
file), and the same ratio for the eager ring measured in bench/results/titanpub_2026-11-28.

Step per row = tokens a GPU per step / TPS a GPU (torchtitan 9dec370 train.py 356-360:
labels.numel() over time x cp x tp x pp). Published TPS are integers: the +-0.5 rounding is
carried as the step's error.

Usage (repository root): python3 bench/results/ttcp20_2026-11-29/step_shape.py
"""
import csv
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")

rows = {r["run_id"]: r for r in csv.DictReader(open(os.path.join(ROOT, "bench/published/torchtitan.csv")))}
pred = {}
for ln in open(os.path.join(HERE, "published_torchtitan.txt")):
    f = ln.split()
    if len(f) > 4 and f[0] in rows and f[3].isdigit():
        pred[f[0]] = float(f[3])

for table, ids in (("Table 2 (8B, 8 GPUs, one node)", ("t2_fsdp8_cp1", "t2_fsdp4_cp2", "t2_fsdp2_cp4", "t2_fsdp1_cp8")),
                  ("Table 6 (405B, 512 GPUs, TP 8 PP 8, CP across nodes)",
                   ("t6_fsdp8_cp1", "t6_fsdp4_cp2", "t6_fsdp2_cp4", "t6_fsdp1_cp8"))):
    print(table)
    steps = []
    for rid in ids:
        r = rows[rid]
        tok = int(r["global_batch"]) * int(r["seq"]) / int(r["gpus"])
        tps = float(r["published_tps_per_gpu"])
        s, lo, hi = tok / tps, tok / (tps + 0.5), tok / (tps - 0.5)
        m = tok / pred[rid]
        steps.append((int(r["cp"]), s, (hi - lo) / 2, m))
        print("  CP %d  published step %7.2f s (+-%.2f)   plan %7.2f s   %+.1f%%" % (
            int(r["cp"]), s, (hi - lo) / 2, m, 100 * (pred[rid] / tps - 1)))
    d_pub = [(b[1] - a[1], (a[2] ** 2 + b[2] ** 2) ** 0.5) for a, b in zip(steps, steps[1:])]
    d_mod = [b[3] - a[3] for a, b in zip(steps, steps[1:])]
    print("  differences CP 1->2, 2->4, 4->8 (affine in c: 1 : 2 : 4)")
    print("    published %s  ratio 1 : %.2f : %.2f" % (
        ", ".join("%.2f+-%.2f" % d for d in d_pub), d_pub[1][0] / d_pub[0][0], d_pub[2][0] / d_pub[0][0]))
    print("    plan      %s  ratio 1 : %.2f : %.2f" % (
        ", ".join("%.2f" % d for d in d_mod), d_mod[1] / d_mod[0], d_mod[2] / d_mod[0]))
    print("    per CP unit: published %s s, plan %s s" % (
        ", ".join("%.2f" % (d[0] / w) for d, w in zip(d_pub, (1, 2, 4))),
        ", ".join("%.2f" % (d / w) for d, w in zip(d_mod, (1, 2, 4)))))

# torch 2.11's eager ring, one layer fwd + bwd, 32k tokens a GPU, allgather, FLASH, 4 x H100
# (bench/results/titanpub_2026-11-28/compare.txt, measured column)
cp2, cp4 = 210.5, 418.1
print("titanpub eager ring, 32k tokens a GPU: CP 4 / CP 2 = %.3f (affine, ring cost only: 2)" % (cp4 / cp2))
