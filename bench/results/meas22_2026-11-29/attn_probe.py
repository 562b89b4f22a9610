#!/usr/bin/env python3
"""The real attention kernel of each run (issue 14, meas22): torch SDPA called as the real step
calls it (attn_shapes.py), forward and forward+backward timed with CUDA events, after warm-up,
median of 7, random bf16 data; the kernels come from torch's default SDPA selection (cuDNN's
flash kernels on H100/H200 for these shapes, bench/realruns/results/launch-h200.json).
Writes one JSON line per shape to stdout.

Usage: python3 attn_probe.py attn_shapes.tsv
"""
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
dev = "cuda"


def timed(fn, reps=7):
    for _ in range(2):
        fn()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    ts.sort()
    return ts[len(ts) // 2]


seen = {}
for ln in open(sys.argv[1]):
    lab, b, h, kvh, s, d, kind, win, n, rc = ln.split()
    b, h, kvh, s, d, win = int(b), int(h), int(kvh), int(s), int(d), int(win)
    key = (b, h, kvh, s, d, kind, win)
    if key not in seen:
        q = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        if kind == "window":  # repeat_kv'd K/V and the explicit mask (the repeat is not timed)
            k = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            i = torch.arange(s, device=dev)
            m = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < win)
            m = m[None, None].expand(b, 1, s, s)
            call = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
        else:
            k = torch.randn(b, kvh, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(b, kvh, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            call = lambda: F.scaled_dot_product_attention(  # noqa: E731
                q, k, v, is_causal=True, enable_gqa=kvh != h)
        g = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
        with torch.no_grad():
            fwd = timed(call)

        def fb():
            o = call()
            o.backward(g)
            q.grad = k.grad = v.grad = None
        fwdbwd = timed(fb)
        o = call()
        assert torch.isfinite(o).all()
        seen[key] = (fwd, fwdbwd)
        del q, k, v, g, o
        torch.cuda.empty_cache()
    fwd, fwdbwd = seen[key]
    print(json.dumps({"label": lab, "b": b, "heads": h, "kv_heads": kvh, "seq": s, "head_dim": d,
                      "kind": kind, "window": win, "layers": int(n), "recompute": int(rc),
                      "fwd_s": fwd, "fwd_bwd_s": fwdbwd}), flush=True)
