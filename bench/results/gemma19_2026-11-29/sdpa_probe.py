#!/usr/bin/env python3
"""gemma19: which SDPA kernel Hugging Face's Gemma attention runs at head dim 256, and its time.
The two calls transformers 5.x makes (integrations/sdpa_attention.py): a full-attention layer with
no mask (is_causal=True, enable_gqa=True, k/v with the config's KV heads) and a sliding layer with
the boolean [b,1,s,s] window mask (k/v repeated to every query head by repeat_kv, no is_causal).
Random bf16 data, CUDA events, median of 10 after 3 warm-ups; the kernel names from one profiled
forward + backward; the bytes allocated and kept by one forward (saved for backward).
Usage: python3 sdpa_probe.py OUT.json b h kv s d window [...more shapes as b:h:kv:s:d:w]"""
import json, statistics, sys
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

dev = torch.device("cuda")
out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
       "flags": {k: getattr(torch.backends.cuda, k)() for k in
                 ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "cudnn_sdp_enabled", "math_sdp_enabled")},
       "shapes": []}
try:
    out["priority"] = [str(x) for x in torch._C._get_sdp_priority_order()]
except Exception as e:  # noqa
    out["priority"] = repr(e)[:100]


def med(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(ts)


for spec in sys.argv[2:]:
    b, h, kv, s, d, w = (int(x) for x in spec.split(":"))
    torch.manual_seed(0)
    q = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, kv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, kv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
    i = torch.arange(s, device=dev)
    mask = ((i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - w))[None, None].expand(b, 1, s, s).contiguous()
    rep = h // kv

    def causal():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True, scale=d ** -0.5)

    def window():
        kr = k[:, :, None].expand(b, kv, rep, s, d).reshape(b, h, s, d)
        vr = v[:, :, None].expand(b, kv, rep, s, d).reshape(b, h, s, d)
        return F.scaled_dot_product_attention(q, kr, vr, attn_mask=mask, scale=d ** -0.5)

    rec = {"b": b, "h": h, "kv": kv, "s": s, "d": d, "window": w}
    for name, fn in (("causal_gqa", causal), ("window_mask_repeat_kv", window)):
        r = {}
        try:
            with torch.no_grad():
                r["fwd_s"] = med(fn)

            def fb():
                o = fn(); o.backward(g); q.grad = k.grad = v.grad = None
            r["fwd_bwd_s"] = med(fb)
            torch.cuda.synchronize()
            m0 = torch.cuda.memory_allocated()
            o = fn()
            torch.cuda.synchronize()
            r["kept_after_fwd_bytes"] = torch.cuda.memory_allocated() - m0
            r["out_bytes"] = o.numel() * o.element_size()
            o.backward(g); q.grad = k.grad = v.grad = None; del o
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                fb(); torch.cuda.synchronize()
            ks = {}
            for e in p.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    t, n = ks.get(e.name[:120], (0.0, 0))
                    ks[e.name[:120]] = (t + e.device_time * 1e-6, n + 1)
            r["kernels"] = sorted([[kk, round(t, 7), n] for kk, (t, n) in ks.items()], key=lambda x: -x[1])[:12]
        except Exception as e:  # noqa
            r["error"] = repr(e)[:300]
        rec[name] = r
    out["shapes"].append(rec)
    print(json.dumps(rec)[:600], flush=True)
    del q, k, v, g, mask
    torch.cuda.empty_cache()
json.dump(out, open(sys.argv[1], "w"), indent=1)
