#!/usr/bin/env python3
"""What dropout inside scaled_dot_product_attention costs in training: transformers' SDPA path
passes dropout_p=config.attention_dropout while training (StarCoder2's published config sets 0.1),
so the backend torch picks and its speed can differ from the dropout-free call plan prices.
Times F.scaled_dot_product_attention forward and forward+backward (CUDA events, 5 warm-ups,
median of 20, random bf16 data, causal, GQA through enable_gqa as transformers 5.x calls it when
the kv heads divide the q heads) at dropout_p 0 and 0.1, and records the kernel names the
profiler sees for each (the backend chosen). Shapes: StarCoder2-7B's attention (36 query heads,
4 kv heads, head dim 128) at the ho24 runs' batch x sequence, and Llama-3.1-8B's (32/8/128).

--masks causal,window adds transformers' explicit mask (sc2step25): a sliding-window model's layers get
a boolean [b, 1, s, s] mask from masking_utils.sdpa_mask once the sequence reaches the window (StarCoder2's
4096 at seq 4096 and 8192), which SDPA converts to an additive bf16 mask and runs without is_causal; at a
window >= seq it is the causal pattern, built here as tril of ones. --shapes limits the shapes to the named
model's (starcoder2, llama8b).

Usage: python3 bench/realruns/sdpa_dropout_probe.py --out $OUT/sdpa_dropout.jsonl [--masks causal,window]
       [--shapes starcoder2]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--masks", default="causal")
ap.add_argument("--shapes", default="starcoder2,llama8b")
args = ap.parse_args()
dev = "cuda"
torch.manual_seed(0)


def timed(fn, reps=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return statistics.median(ts), min(ts), max(ts)


def kernels(fn):
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    names = sorted({e.name for e in p.events() if e.device_type.name == "CUDA"})
    return [n[:120] for n in names]


out = open(args.out, "w")
shapes = [("starcoder2", 36, 4, 128, 2, 4096), ("starcoder2", 36, 4, 128, 1, 8192),
          ("starcoder2", 36, 4, 128, 4, 4096), ("llama8b", 32, 8, 128, 2, 4096),
          ("llama8b", 32, 8, 128, 1, 8192)]
shapes = [x for x in shapes if x[0] in args.shapes.split(",")]
for (name, hq, hkv, d, b, s), mask in [(x, m) for x in shapes for m in args.masks.split(",")]:
    q = torch.randn(b, hq, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, hkv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, hkv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    go = torch.randn(b, hq, s, d, device=dev, dtype=torch.bfloat16)
    flops_fwd = 4.0 * b * hq * s * s * d / 2  # causal: half the scores (window: the same FLOPs)
    am = (torch.ones(s, s, device=dev, dtype=torch.bool).tril().expand(b, 1, s, s)
          if mask == "window" else None)
    for p in (0.0, 0.1):
        def fwd():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=am, dropout_p=p,
                                                  is_causal=am is None, enable_gqa=True)

        def fb():
            o = fwd()
            o.backward(go)
        tf = timed(fwd)
        tfb = timed(fb)
        rec = {"model": name, "mask": mask, "hq": hq, "hkv": hkv, "d": d, "b": b, "s": s, "dropout_p": p,
               "fwd_s": tf[0], "fwd_min_s": tf[1], "fwd_max_s": tf[2],
               "fwd_bwd_s": tfb[0], "fwd_bwd_min_s": tfb[1], "fwd_bwd_max_s": tfb[2],
               "fwd_tflops": flops_fwd / tf[0] / 1e12,
               "bwd_tflops": 2.5 * flops_fwd / (tfb[0] - tf[0]) / 1e12,
               "kernels": kernels(fb), "torch": torch.__version__,
               "gpu": torch.cuda.get_device_name()}
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print("%-10s %-6s b%d s%-5d p=%.1f fwd %.3f ms (%.0f TF/s) fwd+bwd %.3f ms  %s" % (
            name, mask, b, s, p, tf[0] * 1e3, rec["fwd_tflops"], tfb[0] * 1e3,
            [k for k in rec["kernels"] if "flash" in k.lower() or "fmha" in k.lower() or "attn" in k.lower()][:3]),
            flush=True)
