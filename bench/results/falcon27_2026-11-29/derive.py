#!/usr/bin/env python3
"""Summarises falcon40b_attn_probe.jsonl (bench/realruns/falcon40b_attn_probe.py, one H200):
the SDPA call at Falcon-40B's shapes against the attention table's explicit-mask ("window") and
is_causal points of data/systems/h200.json (the rates divide the causal FLOPs 0.5 x 4 b a s^2 d;
the points at 128 heads x b 1, 2 lie on the table's grid), and one attention block's kernels
grouped by the aten op that launched them (self device time, one forward + backward).
Usage: python3 derive.py falcon40b_attn_probe.jsonl [data/systems/h200.json] > derive.txt"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
recs = [json.loads(ln) for ln in open(sys.argv[1]) if ln.strip()]
sysf = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "..", "data", "systems", "h200.json")
pts = json.load(open(sysf))["attention_rates"]["points"]


def point(mask, rows, s):
    for p in pts:
        if p[0] == 64 and p[1] == mask and p[2] == rows and p[3] == s:
            return p[4], p[5]
    return None


print("SDPA, transformers' arguments (q, k, v [b, 128, s, 64] bf16, boolean causal mask, is_causal False); ms")
print("%-9s %8s %8s | %8s %8s | %8s %8s | %8s %8s | %8s %8s | %6s %6s" % (
    "b, s", "fwd", "bwd", "causal_f", "causal_b", "cudnn_f", "cudnn_b", "effic_f", "effic_b",
    "table_f", "table_b", "ps_f", "ps_b"))
for r in recs:
    if r["what"] != "sdpa_at_shape":
        continue
    b, s = r["b"], r["s"]
    f = 0.5 * 4 * b * 128 * s * s * 64
    w = point("window", b * 128, s)
    tf, tb = (f / (w[0] * 1e12) * 1e3, 2.5 * f / (w[1] * 1e12) * 1e3) if w else (float("nan"),) * 2
    print("%-9s %8.3f %8.3f | %8.3f %8.3f | %8.3f %8.3f | %8.3f %8.3f | %8.3f %8.3f | %6.3f %6.3f" % (
        "%d, %d" % (b, s), r["default_fwd_s"] * 1e3, r["default_bwd_s"] * 1e3,
        r["is_causal_fwd_s"] * 1e3, r["is_causal_bwd_s"] * 1e3,
        r["CUDNN_ATTENTION_fwd_s"] * 1e3, r["CUDNN_ATTENTION_bwd_s"] * 1e3,
        r["EFFICIENT_ATTENTION_fwd_s"] * 1e3, r["EFFICIENT_ATTENTION_bwd_s"] * 1e3, tf, tb,
        r["default_fwd_ps_per_score"], r["default_bwd_ps_per_score"]))
print("(ps_f, ps_b: picoseconds a score of the whole s x s; table: data/systems/h200.json attention_rates, "
      "window points, head dim 64)")

GROUPS = [
    ("sdpa (cuDNN masked fprop + bprop)", lambda k, sh: k.startswith("aten::_cudnn_attention")),
    ("GEMMs (qkv, dense)", lambda k, sh: k == "aten::mm"),
    ("RoPE q and k (mul, neg, cat, add; bwd slices, zeros, adds)",
     lambda k, sh: (k in ("aten::mul", "aten::neg", "aten::cat") or
                    (k in ("aten::add", "aten::add_", "aten::copy_", "aten::fill_") and ", 128, " in sh))),
    ("split: index gathers", lambda k, sh: k == "aten::index"),
    ("split: copies [b, s, 8, 16, 64] (3 fwd; q's slice_backward copy bwd)",
     lambda k, sh: k == "aten::copy_" and ", 8, 16, 64]" in sh),
    ("split: zeros of the fused shape", lambda k, sh: k == "aten::fill_" and ", 8, 18, 64]" in sh),
    ("split: index_put_ (accumulate)", lambda k, sh: k == "aten::_index_put_impl_"),
    ("split: sums over the broadcast", lambda k, sh: k == "aten::sum"),
    ("split: fused-shape gradient adds", lambda k, sh: k == "aten::add_" and ", 8, 18, 64]" in sh),
    ("mask: where (bool -> bf16 additive)", lambda k, sh: k == "aten::where"),
]
for r in recs:
    if r["what"] not in ("attention_block", "decoder_layer"):
        continue
    print("\n%s b %d s %d: timed fwd %.3f ms, fwd+bwd %.3f ms (kernels %.3f / %.3f); saved %d B beyond "
          "%d B of parameters" % (r["what"], r["b"], r["s"], r["fwd_s"] * 1e3, r["fwd_bwd_s"] * 1e3,
                                  r["kernel_sum_fwd_s"] * 1e3, r["kernel_sum_fwd_bwd_s"] * 1e3,
                                  r["saved_bytes"] - r["param_bytes"], r["param_bytes"]))
    if r["what"] != "attention_block":
        continue
    print("  %-68s %8s %8s" % ("aten ops (self device ms)", "fwd", "bwd"))
    for name, pred in GROUPS:
        fw = sum(o[3] for o in r["ops_fwd"] if o[0].startswith("aten::") and pred(o[0], o[1]))
        fb = sum(o[3] for o in r["ops_fwd_bwd"] if o[0].startswith("aten::") and pred(o[0], o[1]))
        print("  %-68s %8.3f %8.3f" % (name, fw * 1e3, (fb - fw) * 1e3))
