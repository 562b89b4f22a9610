#!/usr/bin/env python3
"""What an odd row stride of the attention scores costs: transformers' GPT-OSS eager attention
(models/gpt_oss/modeling_gpt_oss.py eager_attention_forward, transformers 5.17.0 lines 235-263)
appends a sink column to the b x heads x s x s scores (torch.cat, line 252), so the softmax runs
over rows of s + 1 and every view over its output (probs[..., :-1], line 259; the cat's own
output slice; slice_backward's) has a row stride of s + 1 elements, odd. This probe measures,
on random bf16 data with CUDA events (3 warm-ups, median of 10; issue 14, branch oss22):

  gemm   torch.bmm at GPT-OSS's attention shapes (head_dim 64, 64 query heads, b 1-2, s 2k-16k):
         PV forward (P @ V) and dV (P^T @ dO) with P's row stride s + 1 (the slice) against s
         (contiguous), QK^T, dP and dQ/dK (always contiguous); at one shape the strides s + 2,
         s + 4, s + 8 (the vector-width condition); FLOPs 2 * bh * s * s * d each.
  ew     the elementwise kernels of the eager path at the GPT-OSS layout and the contiguous one:
         scale, mask add, cat with the sinks, max, sub, bf16 softmax and its backward,
         slice_backward, the scale's backward over the strided cat-output slice, neg, grad sum;
         bytes read + written (one pass over each operand; a broadcast operand once) and the
         achieved bytes/s, with a large device-to-device copy as the ceiling.
  kernels the kernels transformers' own eager_attention_forward launches (torch.profiler), and
         the live blocks at its forward and backward peaks (allocator trace, by size and line).

Usage: python3 bench/realruns/odd_stride_probe.py --out $OUT/odd_stride.jsonl [--quick]
"""
import argparse
import json
import statistics
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--quick", action="store_true", help="small shapes only (a dry run)")
ap.add_argument("--skip", default="", help="comma list of sections to skip: gemm,ew,kernels")
args = ap.parse_args()
DEV = "cuda"
BF = torch.bfloat16
H, KV, D = 64, 8, 64  # GPT-OSS-20B / 120B attention (configs/gpt-oss-20b.json)
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
    return statistics.median(a.elapsed_time(b) for a, b in ev) / 1e3


def rnd(*shape, dtype=BF):
    return torch.randn(*shape, device=DEV, dtype=dtype)


def ceiling():
    n = 2 ** 31  # 4 GiB of bf16 each way
    a, b = rnd(n), torch.empty(n, device=DEV, dtype=BF)
    t = timed(lambda: b.copy_(a))
    assert torch.equal(a[:1000], b[:1000])
    emit({"section": "ceiling", "what": "device-to-device copy", "bytes": 4 * n, "s": t,
          "bytes_per_s": 4 * n / t})
    del a, b
    return 4 * n / t


def gemm_section(shapes, strides_shape):
    for b, s in shapes:
        bh = b * H
        flops = 2.0 * bh * s * s * D
        pad = torch.empty(bh, s, s + 1, device=DEV, dtype=BF).normal_()
        podd = pad[..., :s]  # probs[..., :-1]: row stride s + 1
        pc = rnd(bh, s, s)
        v, do, q, k = rnd(bh, s, D), rnd(bh, s, D), rnd(bh, s, D), rnd(bh, s, D)
        # check: the strided operand gives the product of its contiguous copy (a slab of rows)
        r0 = torch.bmm(podd[:2], v[:2]).float()
        r1 = torch.bmm(podd[:2].contiguous(), v[:2]).float()
        rel = ((r0 - r1).norm() / r1.norm()).item()
        cases = {
            "pv_fwd_stride_s+1": lambda: torch.bmm(podd, v),
            "pv_fwd_contig": lambda: torch.bmm(pc, v),
            "dv_stride_s+1": lambda: torch.bmm(podd.transpose(1, 2), do),
            "dv_contig": lambda: torch.bmm(pc.transpose(1, 2), do),
            "qkT": lambda: torch.bmm(q, k.transpose(1, 2)),
            "dP": lambda: torch.bmm(do, v.transpose(1, 2)),
        }
        for name, fn in cases.items():
            out = fn()
            ok = bool(torch.isfinite(out[:1]).all().item())
            del out
            t = timed(fn)
            emit({"section": "gemm", "case": name, "b": b, "s": s, "bh": bh, "d": D,
                  "flops": flops, "s_median": t, "flops_per_s": flops / t, "finite": ok,
                  "rel_err_strided_vs_contig": rel})
        if (b, s) == strides_shape:
            for extra in (2, 4, 8):
                p2 = torch.empty(bh, s, s + extra, device=DEV, dtype=BF).normal_()[..., :s]
                t = timed(lambda: torch.bmm(p2, v))
                t2 = timed(lambda: torch.bmm(p2.transpose(1, 2), do))
                emit({"section": "gemm", "case": "pv_fwd_stride_s+%d" % extra, "b": b, "s": s,
                      "bh": bh, "d": D, "flops": flops, "s_median": t, "flops_per_s": flops / t})
                emit({"section": "gemm", "case": "dv_stride_s+%d" % extra, "b": b, "s": s,
                      "bh": bh, "d": D, "flops": flops, "s_median": t2,
                      "flops_per_s": flops / t2})
                del p2
            # the kernels cuBLAS picks for each case (one call each under the profiler)
            from torch.profiler import ProfilerActivity, profile
            names = {}
            for name, fn in list(cases.items())[:4]:
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    fn()
                    torch.cuda.synchronize()
                names[name] = [e.key[:110] for e in prof.key_averages()
                               if getattr(e, "self_device_time_total", 0) > 0]
            emit({"section": "gemm_kernels", "b": b, "s": s, "kernels": names})
        del pad, podd, pc, v, do, q, k
        torch.cuda.empty_cache()


def ew_section(shapes, peak_bps):
    f = torch.nn.functional
    for b, s in shapes:
        bh = b * H
        u = float(b * H * s * s)          # scores
        uk = float(b * H * s * (s + 1))   # with the sink column
        x = rnd(b, H, s, s)
        mask = torch.where(torch.ones(s, s, device=DEV, dtype=torch.bool).tril(), 0.0,
                           torch.finfo(BF).min).to(BF).expand(b, 1, s, s).contiguous()
        sinks = rnd(H).reshape(1, -1, 1, 1).expand(b, -1, s, -1)
        c = torch.cat([x, sinks], dim=-1)  # [b, H, s, s + 1]
        mk, mc = c.max(-1, keepdim=True).values, x.max(-1, keepdim=True).values
        dk = c - mk
        pk = f.softmax(dk, dim=-1, dtype=BF)
        pcn = f.softmax(x, dim=-1, dtype=BF)
        gk, gc = rnd(b, H, s, s + 1), rnd(b, H, s, s)
        g1 = rnd(b, H, s, s)
        cv = c[..., :s]  # the cat output's slice: the scale backward's strided input
        # checks: the cat's and the softmax's output against a float reference on a slab
        assert torch.equal(c[0, 0, :, :s], x[0, 0]) and torch.equal(c[0, 1, :, s], sinks[0, 1, :, 0])
        ref = torch.softmax(dk[0, :2].float(), -1)
        rel = ((pk[0, :2].float() - ref).norm() / ref.norm()).item()
        sb = torch.ops.aten.slice_backward
        cases = [  # name, layout, fn, bytes read + written
            ("scale", "contig", lambda: x * 0.125, 4 * u),
            ("scale", "strided_s+1", lambda: cv * 0.125, 4 * u),
            ("mask_add", "contig", lambda: x + mask, 4 * u + 2 * u / H),
            ("cat_sinks", "gptoss", lambda: torch.cat([x, sinks], dim=-1), 2 * u + 2 * uk),
            ("copy_into_slice", "strided_s+1", lambda: cv.copy_(x), 4 * u),
            ("max", "rows_s+1", lambda: c.max(-1, keepdim=True), 2 * uk),
            ("max", "rows_s", lambda: x.max(-1, keepdim=True), 2 * u),
            ("sub_max", "rows_s+1", lambda: c - mk, 4 * uk),
            ("sub_max", "rows_s", lambda: x - mc, 4 * u),
            ("softmax", "rows_s+1", lambda: f.softmax(dk, dim=-1, dtype=BF), 4 * uk),
            ("softmax", "rows_s", lambda: f.softmax(x, dim=-1, dtype=BF), 4 * u),
            ("softmax_bwd", "rows_s+1",
             lambda: torch._softmax_backward_data(gk, pk, -1, BF), 6 * uk),
            ("softmax_bwd", "rows_s",
             lambda: torch._softmax_backward_data(gc, pcn, -1, BF), 6 * u),
            ("slice_backward", "gptoss", lambda: sb(g1, [b, H, s, s + 1], -1, 0, s, 1),
             2 * uk + 4 * u),
            ("neg", "contig_s+1", lambda: torch.neg(gk), 4 * uk),
            ("grad_sum", "contig_s+1", lambda: gk + dk, 6 * uk),
            ("copy", "contig", lambda: x.clone(), 4 * u),
        ]
        for name, lay, fn, nbytes in cases:
            t = timed(fn)
            emit({"section": "ew", "op": name, "layout": lay, "b": b, "s": s, "bh": bh,
                  "bytes": nbytes, "s_median": t, "bytes_per_s": nbytes / t,
                  "fraction_of_copy": nbytes / t / peak_bps,
                  "softmax_rel_err": rel if name == "softmax" else None})
        del x, mask, sinks, c, mk, mc, dk, pk, pcn, gk, gc, g1, cv
        torch.cuda.empty_cache()


def kernels_section(b, s):
    """transformers' own GPT-OSS eager function: kernels (profiler) and the live blocks at its
    forward and backward peaks (allocator trace replayed)."""
    from transformers.models.gpt_oss import modeling_gpt_oss as mg

    class Mod(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.num_key_value_groups = H // KV
            self.sinks = torch.nn.Parameter(rnd(H))
            self.train()

    mod = Mod()
    q = rnd(b, H, s, D).requires_grad_()
    k = rnd(b, KV, s, D).requires_grad_()
    v0 = rnd(b, s, KV, D).requires_grad_()
    mask = torch.where(torch.ones(s, s, device=DEV, dtype=torch.bool).tril(), 0.0,
                       torch.finfo(BF).min).to(BF).expand(b, 1, s, s).contiguous()
    g = rnd(b, s, H, D)

    def step():
        out, w = mg.eager_attention_forward(mod, q, k, v0.transpose(1, 2), mask,
                                            scaling=D ** -0.5, dropout=0.0)
        del w
        return out

    for _ in range(2):
        step().backward(g)
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = step()
        torch.cuda.synchronize()
        out.backward(g)
        torch.cuda.synchronize()
    del out
    kern = sorted(([e.key[:120], e.count, round(e.self_device_time_total / 1e3, 3)]
                   for e in prof.key_averages() if getattr(e, "self_device_time_total", 0) > 0),
                  key=lambda r: -r[2])
    emit({"section": "kernels", "b": b, "s": s, "kernels_ms": kern})
    # live blocks at the peaks
    q.grad = k.grad = v0.grad = mod.sinks.grad = None
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
    out = step()
    torch.cuda.synchronize()
    n_fwd = len(torch.cuda.memory._snapshot()["device_traces"][0])
    after_fwd = torch.cuda.memory_allocated()
    out.backward(g)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    trace = snap["device_traces"][0]
    unit = 2.0 * b * H * s * s

    def where(fr):
        for x in fr:
            fn = x.get("filename", "")
            if "modeling_gpt_oss" in fn or "autograd" in fn:
                return "%s:%d" % (fn.split("/")[-1], x.get("line", 0))
        return "?"

    live, cur, res = {}, 0, []
    for lo, hi, label in ((0, n_fwd, "forward"), (n_fwd, len(trace), "backward")):
        best, best_live = cur, dict(live)
        for e in trace[lo:hi]:
            if e["action"] == "alloc":
                live[e["addr"]] = (e["size"], where(e.get("frames", [])))
                cur += e["size"]
                if cur > best:
                    best, best_live = cur, dict(live)
            elif e["action"] == "free_completed" and e["addr"] in live:
                cur -= live.pop(e["addr"])[0]
        big = sorted(([sz, w] for sz, w in best_live.values() if sz > unit / 8), key=lambda r: -r[0])
        res.append({"phase": label, "peak_above_base_bytes": best,
                    "peak_above_base_units": best / unit, "blocks_over_unit_8": big})
    emit({"section": "memory", "b": b, "s": s, "unit_bytes": unit,
          "saved_after_fwd_bytes": after_fwd - base, "saved_after_fwd_units": (after_fwd - base) / unit,
          "phases": res})


skip = set(args.skip.split(",")) if args.skip else set()
props = torch.cuda.get_device_properties(0)
emit({"section": "env", "gpu": props.name, "torch": torch.__version__,
      "cuda": torch.version.cuda, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
peak = ceiling()
if args.quick:
    gshapes, eshapes, sshape, kshape = [(1, 1024)], [(1, 1024)], (1, 1024), (1, 1024)
else:
    gshapes = [(2, 2048), (1, 4096), (2, 4096), (2, 8192), (1, 16384)]
    eshapes = [(2, 2048), (1, 4096), (2, 4096), (1, 8192)]
    sshape, kshape = (2, 4096), (2, 4096)
if "gemm" not in skip:
    gemm_section(gshapes, sshape)
if "ew" not in skip:
    ew_section(eshapes, peak)
if "kernels" not in skip:
    kernels_section(*kshape)
emit({"section": "done"})
