"""The "grouped_gemm_rates" section of data/systems/h200.json from grouped_mm_grid.py --graph.

Usage: python3 table.py device/grid_graph.jsonl > grouped_gemm_rates.json
Per (h, f) pair four shapes (grouped_rate.h): M-grouped (n f, k h): the up projection's forward
and the down projection's input gradient (the same GEMM shape, the weight read transposed),
their mean time; M-grouped (n h, k f): the down forward and the up input gradient, their mean
time; K-grouped (n f, k h): the up weight gradient; K-grouped (n h, k f): the down weight
gradient. Ratio = the point's TFLOP/s over the median of the dense 8192^3 torch.mm rates the
run measured (one at the start, one after each pair).
"""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1])]
dense = statistics.median(next(r["dense_ref_tflops"] for r in rows if "dense_ref_tflops" in r))
pts = [r for r in rows if "h" in r]
pairs = []
for r in pts:
    if (r["h"], r["f"]) not in pairs:
        pairs.append((r["h"], r["f"]))
shapes = []
for h, f in pairs:
    mine = [r for r in pts if (r["h"], r["f"]) == (h, f)]
    G = sorted({r["groups"] for r in mine})
    R = sorted({r["rows_per_group"] for r in mine})
    at = {(r["groups"], r["rows_per_group"]): r for r in mine}
    for form, n, k, keys in (("M", f, h, ("up_fwd", "down_dgrad")), ("M", h, f, ("down_fwd", "up_dgrad")),
                             ("K", f, h, ("up_wgrad",)), ("K", h, f, ("down_wgrad",))):
        ratio = []
        for g in G:
            row = []
            for m in R:
                p = at[(g, m)]
                ms = statistics.mean(p[key + "_ms"] for key in keys)
                tflops = 2.0 * g * m * n * k / (ms * 1e-3) / 1e12
                row.append(round(tflops / dense, 3))
            ratio.append(row)
        shapes.append({"form": form, "n": n, "k": k, "groups": G, "rows_per_group": R, "ratio": ratio})
out = {"dense_ref_tflops_median": dense, "shapes": shapes}
print(json.dumps(out))
