"""What transformers' eager attention costs one layer: saved bytes, transient peaks and kernel times.

Why: under --impl hf a model whose class refuses SDPA (transformers 5.17 GptOssForCausalLM) runs
eager_attention_forward, which builds the b x heads x s x s scores in the open; plan prices that
(costmodel/hf_eager_attn.c) from the ops' autograd formulas. This probe checks the derivation on
the GPU at the shapes of the real runs, calling the installed transformers' own functions
(models/gpt_oss/modeling_gpt_oss.py and models/llama/modeling_llama.py eager_attention_forward),
with random bf16 q, k, v laid out as the modules give them ([b, heads, s, d], RoPE's output
contiguous, v a transposed view of v_proj's output) and the additive causal mask HF's eager path
builds (bf16 [b, 1, s, s], 0 or the dtype's minimum).

Per shape it prints one JSON line:
  saved_bytes        allocated after the forward minus before, less the output (what autograd keeps)
  fwd_peak_bytes     the forward's peak above the allocation before it
  bwd_peak_bytes     the backward's peak above the allocation before the forward (saved included)
  fwd_ms, bwd_ms     medians of CUDA-event timings (3 warm-ups, 7 timed)
  kernels_fwd/bwd    CUDA time per kernel name (torch.profiler, one pass), ms
Usage: python3 bench/realruns/eager_attn_probe.py --out results.jsonl
"""
import argparse
import json
import statistics

import torch

p = argparse.ArgumentParser()
p.add_argument("--out", default="")
args = p.parse_args()

from transformers.models.gpt_oss import modeling_gpt_oss  # noqa: E402
from transformers.models.llama import modeling_llama  # noqa: E402

SHAPES = [  # name, eager function, b, heads, kv heads, head dim, s, sinks
    ("gpt-oss-20b s4096 b1", modeling_gpt_oss.eager_attention_forward, 1, 64, 8, 64, 4096, True),
    ("gpt-oss-20b s2048 b2", modeling_gpt_oss.eager_attention_forward, 2, 64, 8, 64, 2048, True),
    ("llama-3.2-1b s4096 b2", modeling_llama.eager_attention_forward, 2, 32, 8, 64, 4096, False),
]


class Mod(torch.nn.Module):
    def __init__(self, a, kv, sinks):
        super().__init__()
        self.num_key_value_groups = a // kv
        if sinks:
            self.sinks = torch.nn.Parameter(torch.randn(a, device="cuda", dtype=torch.bfloat16))
        self.train()


def inputs(b, a, kv, d, s):
    q = torch.randn(b, a, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, kv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v0 = torch.randn(b, s, kv, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    return q, k, v0


def mask_of(b, s):
    keep = torch.ones(s, s, device="cuda", dtype=torch.bool).tril()
    m = torch.where(keep, 0.0, torch.finfo(torch.bfloat16).min).to(torch.bfloat16)
    return m.expand(b, 1, s, s).contiguous()


def one(fn, mod, q, k, v0, mask, d):
    v = v0.transpose(1, 2)
    out, w = fn(mod, q, k, v, mask, scaling=d ** -0.5, dropout=0.0)
    del w
    return out


def probe(name, fn, b, a, kv, d, s, sinks):
    torch.manual_seed(0)
    mod = Mod(a, kv, sinks)
    q, k, v0 = inputs(b, a, kv, d, s)
    mask = mask_of(b, s)
    g = torch.randn(b, s, a, d, device="cuda", dtype=torch.bfloat16)
    # correctness: the eager output against SDPA's on the same causal inputs (no sinks)
    if not sinks:
        with torch.no_grad():
            out = one(fn, mod, q, k, v0, mask, d)
            ref = torch.nn.functional.scaled_dot_product_attention(
                q, k.repeat_interleave(a // kv, 1), v0.transpose(1, 2).repeat_interleave(a // kv, 1),
                is_causal=True).transpose(1, 2)
            err = (out.float() - ref.float()).abs().max().item()
        del out, ref
    else:
        err = None
    for _ in range(2):
        one(fn, mod, q, k, v0, mask, d).backward(g)
    torch.cuda.synchronize()
    q.grad = k.grad = v0.grad = None
    if sinks:
        mod.sinks.grad = None
    torch.cuda.empty_cache()
    m0 = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = one(fn, mod, q, k, v0, mask, d)
    torch.cuda.synchronize()
    m1 = torch.cuda.memory_allocated()
    fwd_peak = torch.cuda.max_memory_allocated() - m0
    out_bytes = out.numel() * out.element_size()
    torch.cuda.reset_peak_memory_stats()
    out.backward(g)
    torch.cuda.synchronize()
    bwd_peak = torch.cuda.max_memory_allocated() - m0
    grads = sum(t.grad.numel() * t.grad.element_size() for t in (q, k, v0))
    if sinks:
        grads += mod.sinks.grad.numel() * mod.sinks.grad.element_size()
    del out
    q.grad = k.grad = v0.grad = None
    if sinks:
        mod.sinks.grad = None
    # timings
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    fw, bw = [], []
    for i in range(10):
        e0, e1, e2 = ev(), ev(), ev()
        e0.record()
        out = one(fn, mod, q, k, v0, mask, d)
        e1.record()
        out.backward(g)
        e2.record()
        torch.cuda.synchronize()
        if i >= 3:
            fw.append(e0.elapsed_time(e1))
            bw.append(e1.elapsed_time(e2))
        del out
    kern = {}
    from torch.profiler import ProfilerActivity, profile, record_function
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        with record_function("fwd"):
            out = one(fn, mod, q, k, v0, mask, d)
        torch.cuda.synchronize()
        with record_function("bwd"):
            out.backward(g)
        torch.cuda.synchronize()
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" or getattr(e, "self_device_time_total", 0) > 0:
            t = getattr(e, "self_device_time_total", None)
            if t is None:
                t = e.self_cuda_time_total
            if t > 0:
                kern[e.key[:90]] = [round(t / 1000.0, 3), e.count]
    rec = {"shape": name, "b": b, "heads": a, "kv_heads": kv, "head_dim": d, "seq": s,
           "sinks": sinks, "max_abs_err_vs_sdpa": err,
           "scores": b * a * s * (s + (1 if sinks else 0)),
           "saved_bytes": m1 - m0 - out_bytes, "out_bytes": out_bytes,
           "fwd_peak_bytes": fwd_peak, "bwd_peak_bytes": bwd_peak, "grad_bytes": grads,
           "fwd_ms": statistics.median(fw), "bwd_ms": statistics.median(bw),
           "kernels": kern, "torch": torch.__version__}
    line = json.dumps(rec, sort_keys=True)
    print("PROBE " + line, flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")
    del q, k, v0, mask, g, mod
    torch.cuda.empty_cache()


for sh in SHAPES:
    probe(*sh)
