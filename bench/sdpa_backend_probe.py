#!/usr/bin/env python3
"""Which kernels torch's SDPA runs, by sequence length and tensor layout (one GPU).

Why: the native Llama of bench/realruns (native_llama.py: q, k, v made as [b, s, h, d] and
transposed to [b, h, s, d] views, is_causal=True) ran FlashAttention-2 kernels (pytorch_flash::
flash_fwd/bwd) at seq 32768 on H200 with torch 2.11 (bench/results/heldout_2026-11-27/
h200x4_cp_prof), while bench/attention_sweep.py's contiguous [b, h, s, d] tensors run cuDNN's
(~450 vs ~280 TFLOP/s at head dim 64). This prints, per (seq, layout), the attention kernels of
one forward + backward and their time (torch.profiler), so the backend rule is measured.
Usage: python3 bench/sdpa_backend_probe.py --out $OUT/sdpa-backend.jsonl
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--seqs", default="2048,4096,8192,16384,32768")
ap.add_argument("--heads", type=int, default=32)
ap.add_argument("--dims", default="64,128")
a = ap.parse_args()
dev = torch.device("cuda")
torch.manual_seed(0)
with open(a.out, "w") as out:
    for d in (int(x) for x in a.dims.split(",")):
        for s in (int(x) for x in a.seqs.split(",")):
            for layout in ("bhsd_contiguous", "bshd_transposed"):
                h = a.heads
                if layout == "bhsd_contiguous":
                    q, k, v = (torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16,
                                           requires_grad=True) for _ in range(3))
                    qq, kk, vv = q, k, v
                else:
                    q, k, v = (torch.randn(1, s, h, d, device=dev, dtype=torch.bfloat16,
                                           requires_grad=True) for _ in range(3))
                    qq, kk, vv = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                g = torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16)
                for _ in range(2):  # warm-up
                    F.scaled_dot_product_attention(qq, kk, vv, is_causal=True).backward(g)
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    F.scaled_dot_product_attention(qq, kk, vv, is_causal=True).backward(g)
                    torch.cuda.synchronize()
                ks = {}
                for e in prof.events():
                    if e.device_type == torch.autograd.DeviceType.CUDA:
                        n = e.name[:80]
                        ks[n] = ks.get(n, 0) + e.device_time_total / 1e6
                top = sorted(ks.items(), key=lambda x: -x[1])[:4]
                flops = 4 * h * s * s * d / 2 * 3.5
                tot = sum(ks.values())
                rec = {"d": d, "s": s, "h": h, "layout": layout, "kernel_s": tot,
                       "tflops": flops / tot / 1e12 if tot else 0,
                       "top_kernels": top, "torch": torch.__version__,
                       "gpu": torch.cuda.get_device_name(0)}
                out.write(json.dumps(rec) + "\n")
                print(d, s, layout, round(rec["tflops"]), top[0][0][:60])
