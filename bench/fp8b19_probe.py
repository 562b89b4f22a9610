#!/usr/bin/env python3
"""One compiled decoder block, bf16 against torchao float8 (rowwise, tensorwise), on one GPU:
where the FP8 step's time and memory go (issues 16, 14; bench/results/fp8b19_2026-11-29).

The real FP8 runs (bench/results/fp8run19_2026-11-29) gained less time than plan predicts and held
less memory than bf16, which plan does not predict. This builds one block of the native model
(bench/realruns/native_llama.py TransformerBlock) in bf16, converts it as realrun.py's fp8_convert
does (torchao Float8LinearConfig.from_recipe_name("rowwise") with inductor's
emulate_precision_casts, or Float8LinearConfig() for tensorwise; every Linear converted), compiles
it (torch.compile(fullgraph=True)) and on random data:
  - times forward+backward (CUDA events, 3 warm-ups, median of --reps);
  - lists what the compiled graph saves for the backward (torch.autograd.graph.saved_tensors_hooks
    around the forward: AOTAutograd's compiled function saves through ctx.save_for_backward, so
    every saved tensor passes the pack hook; shape, dtype, bytes, storage deduplicated), and the
    allocated bytes the forward leaves behind (torch.cuda.memory_allocated after the forward, the
    output excluded);
  - profiles one forward+backward (torch.profiler, CUDA kernels from the Chrome trace) and sums
    the kernels by kind: GEMM (cuBLAS / CUTLASS / nvjet), attention (flash / cuDNN / efficient),
    triton (inductor's generated kernels: the casts, amax reductions, norms, RoPE, SwiGLU),
    other; each kernel's name, count and total time are kept.
Usage (torchao on PYTHONPATH): python3 bench/fp8b19_probe.py --config llama-3.1-8b --seq 8192
       --mbs 1 --out probe.json [--variants bf16,rowwise,tensorwise]
The JSON is rewritten whole (tmp + rename) after each variant, so a timeout keeps the finished ones.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "realruns"))

p = argparse.ArgumentParser()
p.add_argument("--config", default="llama-3.1-8b")
p.add_argument("--seq", type=int, default=8192)
p.add_argument("--mbs", type=int, default=1)
p.add_argument("--reps", type=int, default=10)
p.add_argument("--variants", default="bf16,rowwise,tensorwise")
p.add_argument("--out", required=True)
args = p.parse_args()

import torch  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402
from native_llama import Args, TransformerBlock, precompute_freqs_cis  # noqa: E402

with open(os.path.join(HERE, "realruns", "configs", args.config + ".json")) as f:
    CFG = json.load(f)
dev = torch.device("cuda")
res = {"gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__, "cuda": torch.version.cuda,
       "config": args.config, "seq": args.seq, "mbs": args.mbs, "reps": args.reps,
       "torchao": os.environ.get("FP8_TORCHAO_REF", ""), "variants": {}}


def write():
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.out)) or ".")
    with os.fdopen(fd, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, args.out)


def kind_of(name):
    n = name.lower()
    if n.startswith("triton"):
        return "triton"
    if any(k in n for k in ("flash", "fmha", "cudnn", "attention", "attn")):
        return "attention"
    if any(k in n for k in ("gemm", "cutlass", "nvjet", "xmma", "sm90", "matmul", "s16816", "kernel2")):
        return "gemm"
    return "other"


def build(variant):
    torch.manual_seed(0)
    a = Args(CFG, 1)
    with torch.device(dev):
        blk = TransformerBlock(a).to(torch.bfloat16)
    with torch.no_grad():
        for n, prm in blk.named_parameters():
            prm.fill_(1.0) if "norm" in n else prm.normal_(0.0, 0.02)
    n8 = 0
    if variant != "bf16":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
        cfg = (Float8LinearConfig.from_recipe_name("rowwise") if variant == "rowwise"
               else Float8LinearConfig(enable_fsdp_float8_all_gather=False))
        convert_to_float8_training(blk, config=cfg)
        n8 = sum(1 for m in blk.modules() if type(m).__name__ == "Float8Linear")
    freqs = precompute_freqs_cis(a.head_dim, args.seq, a.theta, a.rope_scaling).to(dev)
    return torch.compile(blk, fullgraph=True), freqs, n8


for variant in [v for v in args.variants.split(",") if v]:
    t0 = time.perf_counter()
    inductor_config.emulate_precision_casts = variant == "rowwise"  # as torchtitan sets it
    blk, freqs, n8 = build(variant)
    g = torch.Generator(device=dev).manual_seed(7)
    x = torch.randn(args.mbs, args.seq, CFG["hidden_size"], device=dev, generator=g,
                    dtype=torch.bfloat16).requires_grad_(True)
    dy = torch.randn(x.shape, device=dev, generator=g, dtype=torch.bfloat16)

    def fb():
        x.grad = None
        for prm in blk.parameters():
            prm.grad = None
        blk(x, freqs).backward(dy)

    for _ in range(3):
        fb()
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    ts = []
    for _ in range(args.reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fb()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / 1e3)
    # what the forward saves
    x.grad = None
    for prm in blk.parameters():
        prm.grad = None
    torch.cuda.synchronize()
    saved, seen = [], set()

    def pack(t):
        key = (t.untyped_storage().data_ptr(), t.dtype, tuple(t.shape))
        if key not in seen:
            seen.add(key)
            saved.append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                          "bytes": t.numel() * t.element_size(),
                          "storage_bytes": t.untyped_storage().nbytes(),
                          "is_param": any(t.untyped_storage().data_ptr() ==
                                          q.untyped_storage().data_ptr() for q in blk.parameters()),
                          "is_input": t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()})
        return t

    m0 = torch.cuda.memory_allocated(dev)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = blk(x, freqs)
    torch.cuda.synchronize()
    m1 = torch.cuda.memory_allocated(dev)
    y.backward(dy)
    del y
    torch.cuda.synchronize()
    # one profiled forward+backward
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fb()
        torch.cuda.synchronize()
    tr = os.path.join(tempfile.gettempdir(), "fp8b19_%s.json" % variant)
    prof.export_chrome_trace(tr)
    with open(tr) as f:
        evs = json.load(f).get("traceEvents", [])
    kern = {}
    for e in evs:
        if e.get("cat") == "kernel":
            k = kern.setdefault(e["name"], [0, 0.0])
            k[0] += 1
            k[1] += e.get("dur", 0) / 1e6
    by_kind = {}
    for n, (c, s) in kern.items():
        by_kind[kind_of(n)] = by_kind.get(kind_of(n), 0.0) + s
    out_bytes = x.numel() * x.element_size()
    res["variants"][variant] = {
        "fp8_linears": n8, "compile_and_warmup_s": round(compile_s, 2),
        "fwd_bwd_s_median": statistics.median(ts), "fwd_bwd_s_min": min(ts), "fwd_bwd_s": ts,
        "forward_left_allocated_bytes": m1 - m0 - out_bytes,
        "saved_bytes_new": sum(s["bytes"] for s in saved if not s["is_param"] and not s["is_input"]),
        "saved": saved,
        "kernel_s_by_kind": by_kind,
        "kernels": sorted([[n, c, s] for n, (c, s) in kern.items()], key=lambda r: -r[2]),
    }
    v = res["variants"][variant]
    print("probe: %-10s fwd+bwd %.3f ms, saved new %.1f MB (left %.1f MB), kernels %s, compile %.0f s"
          % (variant, 1e3 * v["fwd_bwd_s_median"], v["saved_bytes_new"] / 1e6,
             v["forward_left_allocated_bytes"] / 1e6,
             {k: round(1e3 * s, 3) for k, s in by_kind.items()}, compile_s), flush=True)
    write()
    del blk, x, dy
    torch.cuda.empty_cache()
