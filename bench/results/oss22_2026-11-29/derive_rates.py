#!/usr/bin/env python3
"""The score-kernel and align1-GEMM rates of data/systems/h200.json (gpu.score_*,
gpu.gemm_align1_*) from device/odd_stride.jsonl (bench/realruns/odd_stride_probe.py, one H200,
2026-11-29): medians over the measured shapes, as fractions of the preset's peak HBM bandwidth.
Usage: python3 bench/results/oss22_2026-11-29/derive_rates.py"""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
PEAK = 4.8e12  # data/systems/h200.json gpu.hbm_bandwidth_bytes_per_s
rows = [json.loads(x) for x in open(os.path.join(HERE, "device", "odd_stride.jsonl"))]
ew = [r for r in rows if r["section"] == "ew"]
gm = [r for r in rows if r["section"] == "gemm"]


def med(vals):
    return statistics.median(vals), vals


classes = {  # class: the (op, layout) cases run by that kernel (the probe's kernel list)
    "score_vectorized_efficiency": [("scale", "contig"), ("neg", "contig_s+1"),
                                    ("grad_sum", "contig_s+1"), ("copy", "contig")],
    "score_offsets_efficiency": [("scale", "strided_s+1"), ("copy_into_slice", "strided_s+1"),
                                 ("mask_add", "contig"), ("sub_max", "rows_s+1")],
    "score_reduce_row_efficiency": [("max", "rows_s+1")],
    "score_softmax_unaligned_fwd_efficiency": [("softmax", "rows_s+1")],
    "score_softmax_unaligned_bwd_efficiency": [("softmax_bwd", "rows_s+1")],
}
out = {}
for name, cases in classes.items():
    v = [r["bytes_per_s"] for r in ew if (r["op"], r["layout"]) in cases]
    m, _ = med(v)
    out[name] = round(m / PEAK, 3)
    print("%-42s %.3f  (median %.2f TB/s of %d: %s)" % (name, m / PEAK, m / 1e12, len(v),
          " ".join("%.2f" % (x / 1e12) for x in v)))
# torch.cat with the expanded sinks: CatArrayBatchedCopy while the output is 32-bit indexable
# (Shape.cu cat_out_cuda: canUse32BitIndexMath(result)), else a copy_ per input (offsets)
small = [r["bytes_per_s"] for r in ew if r["op"] == "cat_sinks" and r["b"] * 64 * r["s"] * (r["s"] + 1) < 2 ** 31]
large = [r["bytes_per_s"] for r in ew if r["op"] == "cat_sinks" and r["b"] * 64 * r["s"] * (r["s"] + 1) >= 2 ** 31]
out["score_cat_array_efficiency"] = round(statistics.median(small) / PEAK, 3)
print("%-42s %.3f  (32-bit indexable outputs: %s TB/s; larger, offsets path: %s TB/s)" % (
    "score_cat_array_efficiency", statistics.median(small) / PEAK,
    " ".join("%.2f" % (x / 1e12) for x in small), " ".join("%.2f" % (x / 1e12) for x in large)))
for name, case in (("gemm_align1_nn_flops", "pv_fwd_stride_s+1"), ("gemm_align1_tn_flops", "dv_stride_s+1")):
    v = [r["flops_per_s"] for r in gm if r["case"] == case]
    out[name] = float("%.3g" % statistics.median(v))
    print("%-42s %.3g  (%s TFLOP/s)" % (name, statistics.median(v), " ".join("%.1f" % (x / 1e12) for x in v)))
for case in ("pv_fwd_contig", "dv_contig", "qkT", "dP"):
    v = [r["flops_per_s"] for r in gm if r["case"] == case]
    print("  aligned %-12s %s TFLOP/s" % (case, " ".join("%.1f" % (x / 1e12) for x in v)))
print(json.dumps(out, sort_keys=True))
