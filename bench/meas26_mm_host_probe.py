#!/usr/bin/env python3
"""meas26: the host's time per torch.matmul call when the row count changes from call to call.

Why: in the profiled torchtitan-style EP step with the per-expert loop (bench/results/prof26_2026-11-29
prof/ep4-loop.ops.json, Qwen3-30B-A3B, EP 4, 32 local experts, top-k routing over random data)
aten::mm's host self time is 142 us per call (1,215 calls), where the dense DTensor TP steps of the
same folder spend 39 us per call (tp2-q3-8b.ops.json, 342 calls). The loop's GEMMs have a row
count that the router sets per expert and per step (prun_moe.py Experts.forward: xe = x[off:off + c]);
plan measure's loop GEMMs are balanced (every expert the same rows every step). This probe times
torch.matmul's host call at the loop's shapes with (a) one row count, (b) a new row count at every
call, (c) the same sequence of row counts again (a second pass: any cache keyed by shape warm).
One GPU, bf16, no sync inside a timed loop (the GPU runs each GEMM faster than the host issues it).
Prints one JSON line per case: median and mean host us per call.
Usage: CUDA_VISIBLE_DEVICES=0 python3 bench/meas26_mm_host_probe.py [--hidden 2048 --ffn 768]
"""
import argparse
import json
import random
import statistics
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--hidden", type=int, default=2048)
ap.add_argument("--ffn", type=int, default=768)
ap.add_argument("--rows", type=int, default=2048)
ap.add_argument("--calls", type=int, default=600)
a = ap.parse_args()
dev = torch.device("cuda", 0)
torch.manual_seed(0)
random.seed(0)
h, f, R = a.hidden, a.ffn, a.rows
X = torch.randn(R + 1024, h, device=dev, dtype=torch.bfloat16)
W = torch.randn(h, f, device=dev, dtype=torch.bfloat16)
G = torch.randn(R + 1024, f, device=dev, dtype=torch.bfloat16)
Wt = torch.randn(f, h, device=dev, dtype=torch.bfloat16)


def run(kind, rows):
    """host us per call of one GEMM kind over the row counts `rows` (slices of one buffer)."""
    out = []
    for c in rows:
        t = time.perf_counter()
        if kind == "fwd":        # x_e @ w1[e]: [c, h] @ [h, f]
            X[:c] @ W
        elif kind == "dgrad":    # grad_h @ w^T: [c, f] @ [f, h]
            G[:c] @ Wt
        else:                    # wgrad: x_e^T @ grad: [h, c] @ [c, f] (k = c)
            X[:c].t() @ G[:c]
        out.append((time.perf_counter() - t) * 1e6)
    torch.cuda.synchronize()
    return out


rec = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
       "blas": str(torch.backends.cuda.preferred_blas_library()), "hidden": h, "ffn": f}
print(json.dumps(rec), flush=True)
def cases(kind, lo, blas):
    run(kind, [R] * 50)  # warm-up at the balanced shape
    torch.cuda.synchronize()
    fixed = run(kind, [R] * a.calls)
    # row counts as a top-k router over random data gives them (about R +- 3 sqrt(R)), each new
    new = random.sample(range(lo, lo + a.calls), a.calls)
    cold = run(kind, new)
    warm = run(kind, new)
    for name, v in (("fixed", fixed), ("new_each_call", cold), ("same_again", warm)):
        print(json.dumps({"kind": kind, "blas": blas, "case": name, "calls": len(v),
                          "median_us": round(statistics.median(v), 2),
                          "mean_us": round(statistics.mean(v), 2)}), flush=True)


for kind in ("fwd", "dgrad", "wgrad"):
    cases(kind, R - 300, "default")
# the same through cuBLASLt (torch's other BLAS path), fresh row counts
torch.backends.cuda.preferred_blas_library("cublaslt")
cases("fwd", R + 301, "cublaslt")
