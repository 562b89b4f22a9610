#!/usr/bin/env python3
"""What an odd output width costs a Linear's GEMMs, and what Granite's multipliers cost (issue 14,
branch granite24).

A Linear y = x W^T with out-features n (a vocabulary of 49155: IBM Granite-3.x) gives every
GEMM of it a leading dimension of n elements: the forward's output y [tokens, n], the input
gradient's operand dy [tokens, n] (dX = dy @ W, reduction over n), the weight gradient's operand
dy^T (dW = dy^T @ x). An odd n makes those rows 2-byte aligned, which leaves cuBLAS its
align1 kernels (bench/realruns/odd_stride_probe.py saw the same for GPT-OSS's P @ V). This probe
measures, on one GPU with random bf16 data, CUDA events, 3 warm-ups and the median of 10:

  gemm    the three GEMMs of the output layer (forward, dX, dW) as autograd runs them for
          F.linear (bf16 operands: FSDP2's param_dtype bf16 gathers the weight in bf16) at
          tokens 4096 and 8192, hidden 4096, n 49152 (aligned) and 49155 (odd) (at 8192 tokens also
          49154 and 49156: rows 4- and 8-byte aligned), and one more
          odd shape (hidden 2048, n 32001) to see whether the rate holds across shapes; the
          kernels cuBLAS picks (torch.profiler)
  loss    F.cross_entropy(logits.float()) forward and backward at both vocabularies
  ew      the multipliers' kernels: hidden * 0.22 over [tokens, 4096] bf16, logits / 16 over
          [tokens, n] bf16, and a device-to-device copy as the ceiling
  model   transformers' GraniteForCausalLM, 2 layers, bf16 parameters, SDPA, b 2 x s 4096,
          forward + backward with labels at n 49155 and 49152 (medians of 5 after 3 warm-ups),
          and the profile of one step at 49155 (kernel totals)

Usage: python3 bench/realruns/odd_vocab_probe.py --out $OUT/odd_vocab.jsonl
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--skip", default="")
args = ap.parse_args()
DEV, BF = "cuda", torch.bfloat16
T0 = time.time()


def emit(rec):
    rec["t_s"] = round(time.time() - T0, 1)
    line = json.dumps(rec, sort_keys=True)
    print(line, flush=True)
    with open(args.out, "a") as f:
        f.write(line + "\n")


def timed(fn, reps=10, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    ts = [a.elapsed_time(b) / 1e3 for a, b in ev]
    return statistics.median(ts), min(ts), max(ts)


def rnd(*shape, dtype=BF):
    return torch.randn(*shape, device=DEV, dtype=dtype)


def versions():
    import transformers
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "transformers": transformers.__version__, "gpu": torch.cuda.get_device_name(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def kernels_of(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.key[:100] for e in prof.key_averages() if getattr(e, "self_device_time_total", 0) > 0]


def gemm_section():
    for t, h, n in ((4096, 4096, 49152), (4096, 4096, 49155), (8192, 4096, 49152),
                    (8192, 4096, 49155), (8192, 4096, 49154), (8192, 4096, 49156),
                    (8192, 2048, 32000), (8192, 2048, 32001)):
        x, w, dy = rnd(t, h), rnd(n, h) * 0.02, rnd(t, n)
        flops = 2.0 * t * h * n
        cases = {"fwd": lambda: F.linear(x, w),           # y = x W^T: [t, n]
                 "dgrad": lambda: dy.mm(w),               # dX = dy W: [t, h], reduction over n
                 "wgrad": lambda: dy.t().mm(x)}           # dW = dy^T x: [n, h]
        # correctness: against fp32 products on a slab
        ref = x[:64].float() @ w.float().t()
        rel = ((F.linear(x[:64], w).float() - ref).norm() / ref.norm()).item()
        for name, fn in cases.items():
            med, lo, hi = timed(fn)
            emit({"section": "gemm", "case": name, "tokens": t, "hidden": h, "n": n,
                  "flops": flops, "s_median": med, "s_min": lo, "s_max": hi,
                  "flops_per_s": flops / med, "rel_err_fwd": rel})
        if t == 8192 and h == 4096 and n in (49152, 49155):
            emit({"section": "gemm_kernels", "tokens": t, "hidden": h, "n": n,
                  "kernels": {k: kernels_of(f) for k, f in cases.items()}})
        del x, w, dy
        torch.cuda.empty_cache()


def loss_section():
    for t, n in ((8192, 49152), (8192, 49155)):
        logits = rnd(t, n).requires_grad_()
        labels = torch.randint(0, n, (t,), device=DEV)

        def fwd():
            return F.cross_entropy(logits.float(), labels)

        def fwd_bwd():
            logits.grad = None
            F.cross_entropy(logits.float(), labels).backward()
        lf = fwd()
        ref = F.cross_entropy(logits.detach().double()[:256], labels[:256])
        sub = F.cross_entropy(logits.detach().float()[:256], labels[:256])
        med_f, _, _ = timed(fwd)
        med_fb, _, _ = timed(fwd_bwd)
        lsm = torch.log_softmax(logits.detach().float(), -1)
        g = torch.randn_like(lsm)
        med_ls, _, _ = timed(lambda: torch.log_softmax(logits.detach().float(), -1))
        med_lsb, _, _ = timed(lambda: torch._log_softmax_backward_data(g, lsm, -1, torch.float32))
        emit({"section": "loss", "tokens": t, "n": n, "fwd_s": med_f, "fwd_bwd_s": med_fb,
              "upcast_plus_log_softmax_s": med_ls, "log_softmax_bwd_s": med_lsb,
              "loss": lf.item(), "rel_err_vs_fp64": abs(sub.item() - ref.item()) / ref.item()})
        del logits, lsm, g
        torch.cuda.empty_cache()


def ew_section():
    n = 2 ** 30
    a, b = rnd(n), torch.empty(n, device=DEV, dtype=BF)
    med, _, _ = timed(lambda: b.copy_(a))
    emit({"section": "ceiling", "bytes": 4 * n, "s": med, "bytes_per_s": 4 * n / med})
    del a, b
    for t, h in ((8192, 4096), (8192, 49155), (8192, 49152)):
        x = rnd(t, h)
        med, _, _ = timed(lambda: x * 0.22)
        med2, _, _ = timed(lambda: x / 16.0)
        emit({"section": "ew", "rows": t, "width": h, "bytes": 4.0 * t * h, "mul_s": med,
              "div_s": med2, "mul_bytes_per_s": 4.0 * t * h / med})
        del x


def model_section():
    from transformers import GraniteConfig, GraniteForCausalLM
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "configs", "granite-3.1-8b.json")) as f:
        cfg = json.load(f)
    cfg["num_hidden_layers"] = 2
    res = {}
    for n in (49155, 49152):
        cfg["vocab_size"] = n
        c = GraniteConfig(**{k: v for k, v in cfg.items() if k not in ("architectures", "torch_dtype")})
        c._attn_implementation = "sdpa"
        torch.manual_seed(0)
        with torch.device(DEV):
            m = GraniteForCausalLM(c).to(BF)
        m.train()
        ids = torch.randint(0, n, (2, 4096), device=DEV)

        def step():
            m.zero_grad(set_to_none=True)
            m(input_ids=ids, labels=ids).loss.backward()
        med, lo, hi = timed(step, reps=5, warm=3)
        res[n] = med
        emit({"section": "model", "layers": 2, "b": 2, "s": 4096, "n": n, "step_s": med,
              "s_min": lo, "s_max": hi})
        if n == 49155:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                step()
                torch.cuda.synchronize()
            rows = sorted(((e.self_device_time_total, e.count, e.key[:90])
                           for e in prof.key_averages()
                           if getattr(e, "self_device_time_total", 0) > 0), reverse=True)
            emit({"section": "model_profile", "n": n,
                  "kernels_us_count": [[round(a, 1), c, k] for a, c, k in rows[:40]]})
        del m
        torch.cuda.empty_cache()


emit({"section": "versions", **versions()})
skip = set(args.skip.split(","))
for name, fn in (("gemm", gemm_section), ("loss", loss_section), ("ew", ew_section),
                 ("model", model_section)):
    if name not in skip:
        fn()
if "src" not in skip:
    import transformers.models.granite.modeling_granite as mg
    import shutil
    shutil.copy(mg.__file__, os.path.join(os.path.dirname(args.out), "modeling_granite_5.17.py"))
print("done in %.1f s" % (time.time() - T0))
