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
# The softmax kernels and the casts inside transformers' own eager functions (device/eager_probe.jsonl,
# bench/realruns/eager_attn_probe.py; and the b 2 s 4096 kernel list of odd_stride.jsonl):
# _softmax_backward_data launches a vectorized grad * output (aten::mul under it in
# device/attribution.jsonl's op tree) before cunn_SoftMaxBackward, so the kernel is timed alone
# here (the op-level figures of odd_stride.jsonl's softmax_bwd hold both)
fn = [json.loads(x) for x in open(os.path.join(HERE, "device", "eager_probe.jsonl"))]
kl = [r for r in rows if r["section"] == "kernels"][0]
fn.append({"shape": "gpt-oss-20b s4096 b2", "b": 2, "heads": 64, "seq": 4096, "sinks": True,
           "kernels": {k[0]: [k[2], k[1]] for k in kl["kernels_ms"]}})


def ktime(kern, prefix):
    return sum(v[0] for k, v in kern.items() if k.startswith(prefix)) / 1e3


sm = {"fwd_bf16": [], "bwd_bf16": [], "fwd_fp32": [], "bwd_fp32": [], "unrolled": []}
for r in fn:
    sc = r["b"] * r["heads"] * r["seq"] * r["seq"]
    sk = r["b"] * r["heads"] * r["seq"] * (r["seq"] + (1 if r["sinks"] else 0))
    k = r["kernels"]
    if r["sinks"]:
        sm["fwd_bf16"].append(4 * sk / ktime(k, "void at::native::(anonymous namespace)::cunn_SoftMaxForward"))
        sm["bwd_bf16"].append(6 * sk / ktime(k, "void at::native::(anonymous namespace)::cunn_SoftMaxBackward"))
    else:
        sm["fwd_fp32"].append(8 * sc / ktime(k, "void at::native::(anonymous namespace)::cunn_SoftMaxForward"))
        sm["bwd_fp32"].append(12 * sc / ktime(k, "void at::native::(anonymous namespace)::cunn_SoftMaxBackward"))
        # bf16 -> fp32 casts: the softmax's input copy and .to(bf16)'s gradient, 6 bytes a score each
        sm["unrolled"].append(12 * sc / ktime(k, "void at::native::unrolled_elementwise_kernel<at::native::direct_copy"))
for key, name in (("fwd_bf16", "score_softmax_unaligned_fwd_efficiency"),
                  ("bwd_bf16", "score_softmax_unaligned_bwd_efficiency"),
                  ("fwd_fp32", "score_softmax_fp32_fwd_efficiency"),
                  ("bwd_fp32", "score_softmax_fp32_bwd_efficiency"),
                  ("unrolled", "score_unrolled_efficiency")):
    v = sm[key]
    out[name] = round(statistics.median(v) / PEAK, 3)
    print("%-42s %.3f  (in the eager functions: %s TB/s)" % (name, statistics.median(v) / PEAK,
          " ".join("%.2f" % (x / 1e12) for x in v)))
for name, case in (("gemm_align1_nn_flops", "pv_fwd_stride_s+1"), ("gemm_align1_tn_flops", "dv_stride_s+1")):
    v = [r["flops_per_s"] for r in gm if r["case"] == case]
    out[name] = float("%.3g" % statistics.median(v))
    print("%-42s %.3g  (%s TFLOP/s)" % (name, statistics.median(v), " ".join("%.1f" % (x / 1e12) for x in v)))
for case in ("pv_fwd_contig", "dv_contig", "qkT", "dP"):
    v = [r["flops_per_s"] for r in gm if r["case"] == case]
    print("  aligned %-12s %s TFLOP/s" % (case, " ".join("%.1f" % (x / 1e12) for x in v)))
print(json.dumps(out, sort_keys=True))
