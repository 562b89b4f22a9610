#!/usr/bin/env python3
"""GEMMs and eager elementwise kernels of a Hugging Face decoder layer's forward, each timed inside
the layer (GEMMs interleaved with the memory-bound kernels, as in a training step) and alone (the
GEMMs back to back; the elementwise kernels back to back), with the SM clock and board power.

Why (issue 14, bench/results/fwdbwd14_2026-11-28 section 1): in real one-GPU H200 steps plan
prices the GEMMs 14-18% slow (sustained rate of back-to-back GEMMs at the power cap) and the rest
15-40% fast (eager kernels at their rate alone). Both are one mechanism if the power controller
gives the mixed step a clock between the two: GEMMs faster than back to back, memory-bound kernels
slower than alone. This measures both at the shapes of the real runs in one pass.

The layer is Hugging Face's Llama forward written out with the same aten ops (transformers 5.x
modeling_llama: LlamaRMSNorm's fp32 upcast / pow / mean / rsqrt / mul / cast / weight mul,
q/k/v/o projections, rotate_half RoPE (neg + cat), SDPA (cuDNN), SiLU(gate) * up, residual adds),
bf16, no autograd. Every op is timed with its own pair of CUDA events; per op the median over the
measured window (after a settle time in the same mode). Random N(0,1) data; each GEMM is checked
once against fp32. Bytes of an elementwise op: its inputs' and output's storage.

Usage: python3 bench/realruns/eager_mix.py --out FILE.json [--settle-s 0.8] [--measure-s 1.2]
Shapes: qwen3-4b s4096 b1, llama-3.2-3b s2048 b8, phi-3-mini-4k s2048 b4 (the fwdbwd14 rows)."""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F
from nvml_sampler import Sampler

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--settle-s", type=float, default=0.8)
ap.add_argument("--measure-s", type=float, default=1.2)
a = ap.parse_args()
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
PEAK_FLOPS, PEAK_BW = 989.4e12, 4.8e12

# name: tokens (batch, seq), hidden, intermediate, q heads, kv heads, head dim
SHAPES = {"qwen3-4b_s4096_b1": (1, 4096, 2560, 9728, 32, 8, 128),
          "llama-3.2-3b_s2048_b8": (8, 2048, 3072, 8192, 24, 8, 128),
          "phi-3-mini-4k_s2048_b4": (4, 2048, 3072, 8192, 32, 32, 96)}


def layer_ops(B, S, H, I, nq, nkv, d):
    """[(name, kind, fn, bytes, flops)] of one decoder layer's forward; fn() runs one op."""
    bf = torch.bfloat16
    r = lambda *s, dt=bf: torch.randn(*s, device=dev, dtype=dt)  # noqa: E731
    x = r(B, S, H)
    W = {"q": r(nq * d, H) * H ** -0.5, "k": r(nkv * d, H) * H ** -0.5, "v": r(nkv * d, H) * H ** -0.5,
         "o": r(H, nq * d) * (nq * d) ** -0.5, "gate": r(I, H) * H ** -0.5, "up": r(I, H) * H ** -0.5,
         "down": r(H, I) * I ** -0.5}
    nw = r(H)
    cos, sin = r(1, 1, S, d), r(1, 1, S, d)
    st = {"x": x}
    ops = []

    def mm(name, src, w, dst):
        def fn():
            st[dst] = F.linear(st[src], W[w])
        M = B * S
        ops.append((name, "gemm", fn, None, 2.0 * M * W[w].shape[0] * W[w].shape[1], None, None))

    def rmsnorm(p, src, dst):
        def f1():
            st[p + "x32"] = st[src].to(torch.float32)

        def f2():
            st[p + "sq"] = st[p + "x32"].pow(2)

        def f3():
            st[p + "var"] = st[p + "sq"].mean(-1, keepdim=True)

        def f4():
            st[p + "rs"] = torch.rsqrt(st[p + "var"] + 1e-6)

        def f5():
            st[p + "n32"] = st[p + "x32"] * st[p + "rs"]

        def f6():
            st[p + "nb"] = st[p + "n32"].to(bf)

        def f7():
            st[dst] = nw * st[p + "nb"]
        n = B * S * H
        for nm, fn, by in ((p + "to_fp32", f1, n * 6), (p + "pow", f2, n * 8), (p + "mean", f3, n * 4),
                           (p + "rsqrt", f4, B * S * 8), (p + "mul", f5, n * 8), (p + "to_bf16", f6, n * 6),
                           (p + "weight_mul", f7, n * 4)):
            ops.append((nm, "elementwise", fn, by, 0.0, None, None))

    def rope(t, nh):
        def fv():
            st[t + "h"] = st[t].view(B, S, nh, d).transpose(1, 2)

        def f1():
            st[t + "c"] = st[t + "h"] * cos

        def f2():
            st[t + "neg"] = -st[t + "h"][..., d // 2:]

        def f3():
            st[t + "rot"] = torch.cat((st[t + "neg"], st[t + "h"][..., : d // 2]), dim=-1)

        def f4():
            st[t + "s"] = st[t + "rot"] * sin

        def f5():
            st[t + "r"] = st[t + "c"] + st[t + "s"]
        n = B * S * nh * d
        ops.append((t + "view", "view", fv, 0, 0.0, None, None))
        for nm, fn, by in ((t + "rope_mul_cos", f1, n * 4), (t + "rope_neg", f2, n * 2),
                           (t + "rope_cat", f3, n * 4), (t + "rope_mul_sin", f4, n * 4),
                           (t + "rope_add", f5, n * 6)):
            ops.append((nm, "elementwise", fn, by, 0.0, None, None))

    rmsnorm("ln1_", "x", "h1")
    mm("q_proj", "h1", "q", "q")
    mm("k_proj", "h1", "k", "k")
    mm("v_proj", "h1", "v", "v")
    rope("q", nq)
    rope("k", nkv)

    def fvv():
        st["vh"] = st["v"].view(B, S, nkv, d).transpose(1, 2)

    def fattn():
        st["att"] = F.scaled_dot_product_attention(st["qr"], st["kr"], st["vh"], is_causal=True,
                                                   enable_gqa=nq != nkv)

    def fat():
        st["att2"] = st["att"].transpose(1, 2).reshape(B, S, nq * d)
    ops.append(("v_view", "view", fvv, 0, 0.0, None, None))
    ops.append(("sdpa", "attention", fattn, 0, 2.0 * B * nq * S * S * d, None, None))
    # a copy only where SDPA's output is not already laid out (B, S, heads, d): left untimed
    ops.append(("attn_out_reshape", "view", fat, 0, 0.0, None, None))
    mm("o_proj", "att2", "o", "ao")

    def fres1():
        st["x2"] = st["x"] + st["ao"]
    ops.append(("residual_add1", "elementwise", fres1, B * S * H * 6, 0.0, None, None))
    rmsnorm("ln2_", "x2", "h2")
    mm("gate_proj", "h2", "gate", "g")
    mm("up_proj", "h2", "up", "u")

    def fsilu():
        st["ga"] = F.silu(st["g"])

    def fmul():
        st["gu"] = st["ga"] * st["u"]

    def fres2():
        st["y"] = st["x2"] + st["dn"]
    ops.append(("silu", "elementwise", fsilu, B * S * I * 4, 0.0, None, None))
    ops.append(("silu_mul_up", "elementwise", fmul, B * S * I * 6, 0.0, None, None))
    mm("down_proj", "gu", "down", "dn")
    ops.append(("residual_add2", "elementwise", fres2, B * S * H * 6, 0.0, None, None))
    return [(o[0], o[1], o[2], o[3], o[4]) for o in ops], st, W


def check(ops, st, W):
    """run once in order; check one GEMM against fp32"""
    for o in ops:
        o[2]()
    torch.cuda.synchronize()
    ref = st["h2"].float() @ W["gate"].float().t()
    return float((st["g"].float() - ref).norm() / ref.norm())


def run_mode(ops, kinds, batch=8):
    """ops whose kind is in kinds, looped for settle + measure; per op median time (s). Events of
    `batch` iterations are read after one synchronize, and each batch starts behind a short GPU
    spin (torch.cuda._sleep, ~0.2 ms) so the host is ahead of the GPU and an op's event pair
    times the kernel, not the host's launch"""
    sel = [o for o in ops if o[1] in kinds or o[1] == "view"]
    t_end = time.time() + a.settle_s
    while time.time() < t_end:
        for o in sel:
            o[2]()
        torch.cuda.synchronize()
    timed = [o for o in sel if o[1] != "view"]
    pool = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in timed] for _ in range(batch)]
    times = {o[0]: [] for o in timed}
    with Sampler() as sm:
        t_end = time.time() + a.measure_s
        n_it = 0
        while time.time() < t_end:
            torch.cuda._sleep(400000)
            for it in range(batch):
                j = 0
                for o in sel:
                    if o[1] == "view":
                        o[2]()
                        continue
                    e0, e1 = pool[it][j]
                    e0.record()
                    o[2]()
                    e1.record()
                    j += 1
            torch.cuda.synchronize()
            for it in range(batch):
                for o, (e0, e1) in zip(timed, pool[it]):
                    times[o[0]].append(e0.elapsed_time(e1) * 1e-3)
            n_it += batch
    return {nm: statistics.median(v) for nm, v in times.items()}, sm.summary(), n_it


res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev),
       "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "shapes": {}}
for name, shp in SHAPES.items():
    ops, st, W = layer_ops(*shp)
    err = check(ops, st, W)
    meta = {o[0]: {"kind": o[1], "bytes": o[3], "flops": o[4]} for o in ops if o[1] != "view"}
    out = {"shape": shp, "gemm_rel_err": err, "ops": meta, "modes": {}}
    for mode, kinds in (("layer", ("gemm", "elementwise", "attention")), ("gemm_alone", ("gemm",)),
                        ("elementwise_alone", ("elementwise",)), ("layer2", ("gemm", "elementwise", "attention"))):
        t, pw, n = run_mode(ops, kinds)
        g = [k for k in t if meta[k]["kind"] == "gemm"]
        e = [k for k in t if meta[k]["kind"] == "elementwise"]
        s = {"iterations": n, "power": pw, "op_s": t}
        if g:
            gs = sum(t[k] for k in g)
            s["gemm_s"] = gs
            s["gemm_flops_per_s"] = sum(meta[k]["flops"] for k in g) / gs
        if e:
            es = sum(t[k] for k in e)
            s["elementwise_s"] = es
            s["elementwise_bytes_per_s"] = sum(meta[k]["bytes"] for k in e) / es
        if "sdpa" in t:
            s["attention_s"] = t["sdpa"]
        out["modes"][mode] = s
        print("%-24s %-18s it %4d clock %s MHz power %s W  gemm %s TFLOP/s  elementwise %s TB/s" % (
            name, mode, n, pw.get("sm_clock_mhz_median"), pw.get("power_w_energy"),
            "%.1f" % (s["gemm_flops_per_s"] / 1e12) if g else "-",
            "%.3f" % (s["elementwise_bytes_per_s"] / 1e12) if e else "-"), flush=True)
    res["shapes"][name] = out
    del ops, st, W
    torch.cuda.empty_cache()
with open(a.out + ".tmp", "w") as f:
    json.dump(res, f, indent=1)
import os  # noqa: E402
os.replace(a.out + ".tmp", a.out)
