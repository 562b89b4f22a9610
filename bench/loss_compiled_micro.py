#!/usr/bin/env python3
"""The loss head's cross entropy alone, eager against torch.compile'd, on one GPU (issue 19).

torchtitan compiles its loss function with the model since 2025 (compile.components default
["model", "loss"], torchtitan b5bcd76 components/loss.py _maybe_compile); before, and in
bench/realruns' trainers, the loss ran eager: F.cross_entropy(logits.float(), labels). This
times forward + backward of exactly that function on random bf16 logits [T, V] (CUDA events,
warm-up, median of --reps), and measures the memory it needs above the logits themselves
(torch.cuda max_memory_allocated after reset, minus what is allocated before the call), in
bytes per logit: the figures costmodel/memory.c (memory_logits_bytes) and elementwise.c
(elementwise_head) price. Checks: compiled and eager losses agree to 1e-3 relative and their
gradients to 2e-2 (bf16).

Usage: python3 bench/loss_compiled_micro.py [--reps 10] --out results.json
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--reps", type=int, default=10)
p.add_argument("--out", default="")
p.add_argument("--shapes", default="16384x128256,8192x151936,4096x32000")
args = p.parse_args()


def loss_fn(logits, labels):
    return F.cross_entropy(logits.float(), labels)


compiled = torch.compile(loss_fn)
dev = torch.device("cuda")
res = {"gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
       "cuda": torch.version.cuda, "reps": args.reps, "rows": []}
for shape in args.shapes.split(","):
    T, V = (int(x) for x in shape.split("x"))
    g = torch.Generator(device=dev).manual_seed(T + V)
    base = (torch.randn(T, V, device=dev, generator=g) * 2).to(torch.bfloat16)
    labels = torch.randint(0, V, (T,), device=dev, generator=g)
    row = {"tokens": T, "vocab": V, "logits": T * V}
    outs = {}
    for name, fn in (("eager", loss_fn), ("compiled", compiled)):
        x = base.clone().requires_grad_(True)
        for _ in range(3):  # warm-up (compiles)
            fn(x, labels).backward()
            x.grad = None
        torch.cuda.synchronize()
        times = []
        for _ in range(args.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(x, labels).backward()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
            x.grad = None
        # memory above the logits: peak during forward + backward, minus what is held before
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        before = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        loss = fn(x, labels)
        after_fwd = torch.cuda.memory_allocated(dev)
        loss.backward()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated(dev)
        outs[name] = (float(loss), x.grad.float())
        x.grad = None
        del loss
        row[name] = {"fwd_bwd_s_median": statistics.median(times), "fwd_bwd_s_min": min(times),
                     "times_s": [round(t, 6) for t in times],
                     "saved_after_fwd_bytes_per_logit": (after_fwd - before) / (T * V),
                     "peak_above_logits_bytes_per_logit": (peak - before) / (T * V),
                     "bytes_per_logit_with_logits": 2 + (peak - before) / (T * V)}
        if shape == args.shapes.split(",")[0]:  # the kernels one fwd + bwd launches
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn(x, labels).backward()
                torch.cuda.synchronize()
            x.grad = None
            row[name]["kernels"] = [(e.key[:90], round(getattr(e, "device_time_total", 0) / 1e3, 4))
                                    for e in prof.key_averages() if getattr(e, "device_time_total", 0) > 0]
    le, ge = outs["eager"]
    lc, gc = outs["compiled"]
    row["loss_rel_diff"] = abs(le - lc) / abs(le)
    row["grad_max_abs_diff"] = float((ge - gc).abs().max())
    row["grad_scale"] = float(ge.abs().max())
    row["check_ok"] = row["loss_rel_diff"] < 1e-3 and row["grad_max_abs_diff"] <= 2e-2 * row["grad_scale"]
    res["rows"].append(row)
    print(json.dumps(row), flush=True)
    del base, x, outs, ge, gc
    torch.cuda.empty_cache()
if args.out:
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
sys.exit(0 if all(r["check_ok"] for r in res["rows"]) else 1)
