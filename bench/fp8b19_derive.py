#!/usr/bin/env python3
"""The H200 constants of bench/results/fp8b19_2026-11-29 from bench/fp8b19_probe.py's probe.json:
gpu.torchao_cast_efficiency_rowwise / _tensorwise (the FP8 block's kernels other than GEMMs and
attention less the bf16 block's, against the cast bytes costmodel/precision.c counts for one
Llama-3.1-8B layer), gpu.fp8_rowwise_over_tensorwise_gemm (tensorwise GEMM time / rowwise), and
the saved bytes bf16 - FP8 against memory_torchao_compiled_recompute's 2 x 2h + 2 ffn a token.
Usage: python3 bench/fp8b19_derive.py bench/results/fp8b19_2026-11-29/probe.json
"""
import json
import sys

r = json.load(open(sys.argv[1]))
cfg = json.load(open("bench/realruns/configs/%s.json" % r["config"]))
h, f, a, d = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], \
    cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
kv = cfg["num_key_value_heads"]
T = r["seq"] * r["mbs"]
HBM = 4.8e12  # data/systems/h200.json gpu.hbm_bandwidth_bytes_per_s
# plan's Linears of a layer (out, in): fused qkv, attention out, fused w1/w3, w2
lin = [((a + 2 * kv) * d, h), (h, a * d), (2 * f, h), (h, f)]
x = sum(T * i for o, i in lin)
w = sum(o * i for o, i in lin)
dy = sum(T * o for o, i in lin)
cast_bytes = {"rowwise": 5 * x + 5 * w + 5 * x + 5 * w + 10 * dy,   # precision.c rules_table
              "tensorwise": 5 * x + 5 * w + 5 * x + 5 * w + 8 * dy}
V = r["variants"]


def rest(v):  # kernels other than GEMMs and attention, s
    k = V[v]["kernel_s_by_kind"]
    return k.get("triton", 0) + k.get("other", 0)


out = {}
for rec in ("rowwise", "tensorwise"):
    if rec in V and "bf16" in V:
        t = rest(rec) - rest("bf16")
        out[rec] = {"cast_s": t, "cast_bytes": cast_bytes[rec], "rate_bytes_per_s": cast_bytes[rec] / t,
                    "efficiency": cast_bytes[rec] / t / HBM,
                    "gemm_s": V[rec]["kernel_s_by_kind"]["gemm"],
                    "saved_less_bytes": V["bf16"]["saved_bytes_new"] - V[rec]["saved_bytes_new"]}
        print("%-10s casts %.3f ms for %.3f GB: %.3f TB/s = %.4f of peak; GEMMs %.4f ms (bf16 %.4f); "
              "saved %.1f MB less (term: %.1f MB)" % (
                  rec, 1e3 * t, cast_bytes[rec] / 1e9, cast_bytes[rec] / t / 1e12, out[rec]["efficiency"],
                  1e3 * out[rec]["gemm_s"], 1e3 * V["bf16"]["kernel_s_by_kind"]["gemm"],
                  out[rec]["saved_less_bytes"] / 1e6, T * (4 * h + 2 * f) / 1e6))
if "rowwise" in out and "tensorwise" in out:
    print("tensorwise / rowwise GEMM time: %.4f" % (out["tensorwise"]["gemm_s"] / out["rowwise"]["gemm_s"]))
