#!/usr/bin/env python3
"""The HBM rate of Inductor's generated kernels in a compiled native block, from the measured
kernel times of bench/compiled_kernels.py (its JSON) and the bytes costmodel/elementwise.c
inductor_native_layer lists for them (the same per-token formulas, restated here so the rate can
be checked by hand): gpu.inductor_elementwise_efficiency = sum of the listed bytes of the
Inductor kernels / (sum of the triton_* kernel time x peak HBM bandwidth), over every spec.
Also prints, per spec, the listed bytes of the aten ops Inductor leaves eager (the complex
products of RoPE) beside the eager kernel time measured in the compiled block.
Usage: python3 bench/compiled_kernels_rate.py bench/results/compiled13_2026-11-28/compiled_kernels.json
           [--hbm-bytes-per-s 4.8e12]
Standard library only.
"""
import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("json")
ap.add_argument("--hbm-bytes-per-s", type=float, default=4.8e12, help="peak (H200: 4.8e12)")
args = ap.parse_args()
d = json.load(open(args.json))


def listed_bytes(cfg, tokens):
    """(inductor bytes, aten bytes) per layer, forward + backward, one GPU (tp 1)."""
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    hd = cfg.get("head_dim") or h // heads
    q = tokens * heads * hd
    k = tokens * (cfg.get("num_key_value_heads") or heads) * hd
    e, f = tokens * h, tokens * cfg["intermediate_size"]
    gqa = q > k
    fwd = 4 * e + 6 * q + 6 * k + 6 * q + ((4 * k + 2 * q) + (2 * k + 2 * q) if gqa else 6 * k) \
        + 8 * e + 6 * f + 6 * e
    bwd = 10 * f + 12 * e + 10 * e + 2 * 4 * e + 6 * q + \
        ((2 * q + 4 * k) + (2 * q + 2 * k) if gqa else 6 * k) + 6 * q + 6 * k
    if cfg.get("model_type") == "qwen3":
        bwd += 8 * (q + k)
    aten = 2 * (8 * q + 8 * k)
    return fwd + bwd, aten


tot_b = tot_t = 0.0
print("%-22s %10s %10s %8s %10s %10s" % ("spec", "ind_MB", "triton_ms", "rate", "aten_MB", "eager_ms"))
for spec, r in d["specs"].items():
    name, seq, mbs = spec.split(":")
    cfg = json.load(open(os.path.join(ROOT, "bench", "realruns", "configs", name + ".json")))
    ind, aten = listed_bytes(cfg, int(seq) * int(mbs))
    c = r["compiled"]["classes_ms_per_layer"]
    tri = (c["fwd"].get("triton", 0) + c["bwd"].get("triton", 0)) * 1e-3
    eag = (c["fwd"].get("eager_elementwise", 0) + c["bwd"].get("eager_elementwise", 0)) * 1e-3
    tot_b += ind
    tot_t += tri
    print("%-22s %10.1f %10.3f %8.3f %10.1f %10.3f" % (spec, ind / 1e6, tri * 1e3,
                                                     ind / tri / args.hbm_bytes_per_s,
                                                     aten / 1e6, eag * 1e3))
print("all specs: %.1f GB in %.3f ms: %.3f of %.2f TB/s" % (tot_b / 1e9, tot_t * 1e3,
                                                           tot_b / tot_t / args.hbm_bytes_per_s,
                                                           args.hbm_bytes_per_s / 1e12))
