#!/usr/bin/env python3
"""GPU time per decoder layer of torchtitan's Llama block, eager and under torch.compile, by kernel
class and by pass (issue 14: compiled native runs are predicted 2-8% too fast on every real run so
far, bench/results/session12_2026-11-28/fidelity_1gpu.txt; plan prices a compiled block's
pointwise work as the fused lumps Transformer Engine runs, costmodel/elementwise.c).

For each spec NAME:SEQ:MBS (a config of bench/realruns/configs) it builds LAYERS blocks of
bench/realruns/native_llama.py (the model realrun.py --impl native trains) with bf16 weights (the
compute dtype FSDP2's mixed precision gives the blocks), random N(0, 0.02) weights and inputs,
and runs the stack forward and backward (a random output gradient), eager and with each block
wrapped in torch.compile(fullgraph=True) as torchtitan's apply_compile and realrun.py do. After
warm-up (compilation included) it times REPEAT passes with CUDA events (median per pass) and
profiles two more with torch.profiler, splitting kernels into forward and backward at a
synchronize between them. Kernel classes: gemm (nvjet / cutlass / xmma / gemm), attention
(flash / fmha / cudnn), triton (Inductor's generated kernels), eager_elementwise (everything
else). Times are per layer in ms; the forward pass includes the input's RoPE table lookup.
Writes one JSON object (--out) with the GPU, torch version, and per spec and mode the classes.

--modes adds the checkpointed eager blocks (sac: torchtitan's op-level policy; ckpt: full), whose
backward pass includes the recompute. host_*_ms_per_layer: the host's wall time to issue each pass
(perf_counter around the call, no synchronize inside): at a tiny sequence, where the GPU keeps up,
the host's cost of the pass; kernels_per_layer: the CUDA kernels of the profiled passes.

Usage (one GPU): python3 bench/compiled_kernels.py --out out.json
        --specs llama-3.2-3b:4096:1,llama-3.2-1b:4096:4 --layers 4 [--modes eager,sac,ckpt]
"""
import argparse
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "realruns"))

ap = argparse.ArgumentParser()
ap.add_argument("--specs", default="llama-3.2-3b:4096:1")
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--repeat", type=int, default=10)
ap.add_argument("--out", default="")
ap.add_argument("--modes", default="eager,compiled",
                help="comma list of eager, compiled, sac (eager blocks under realrun.py --sac op's "
                     "policy, sac_policy.py), ckpt (eager blocks fully checkpointed as realrun.py "
                     "--ckpt wraps them)")
args = ap.parse_args()

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from native_llama import Args, TransformerBlock, precompute_freqs_cis  # noqa: E402

CLASSES = [("gemm", re.compile(r"nvjet|gemm|cutlass|xmma|cublas", re.I)),
           ("attention", re.compile(r"flash|fmha|cudnn|attention", re.I)),
           ("triton", re.compile(r"^triton_", re.I)),
           ("eager_elementwise", re.compile(r"."))]


def klass(name):
    for c, rx in CLASSES:
        if rx.search(name):
            return c
    return "eager_elementwise"


def wrap(b, mode):
    if mode in ("sac", "ckpt"):
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        if mode == "sac":
            from sac_policy import sac_context_fn
            return checkpoint_wrapper(b, context_fn=sac_context_fn, preserve_rng_state=False)
        return checkpoint_wrapper(b, preserve_rng_state=False)
    return torch.compile(b, fullgraph=True) if mode == "compiled" else b


def build(name, seq, mbs, mode):
    with open(os.path.join(HERE, "realruns", "configs", name + ".json")) as f:
        cfg = json.load(f)
    a = Args(cfg, args.layers)
    torch.manual_seed(0)
    blocks = []
    for _ in range(args.layers):
        b = TransformerBlock(a).to("cuda", torch.bfloat16)
        for p in b.parameters():
            torch.nn.init.normal_(p, 0.0, 0.02) if p.dim() > 1 else torch.nn.init.ones_(p)
        blocks.append(wrap(b, mode))
    freqs = precompute_freqs_cis(a.head_dim, seq, a.theta, a.rope_scaling).to("cuda")
    x = (torch.randn(mbs, seq, a.dim, device="cuda", dtype=torch.bfloat16) * 0.5).requires_grad_()
    g = torch.randn(mbs, seq, a.dim, device="cuda", dtype=torch.bfloat16)
    return blocks, freqs, x, g


def fwd(blocks, freqs, x):
    h = x
    for b in blocks:
        h = b(h, freqs)
    return h


def run(name, seq, mbs, mode):
    blocks, freqs, x, g = build(name, seq, mbs, mode)
    for _ in range(3):  # compile + warm-up
        out = fwd(blocks, freqs, x)
        out.backward(g)
        x.grad = None
        for b in blocks:
            for p in b.parameters():
                p.grad = None
    torch.cuda.synchronize()
    tf, tb, hf, hb = [], [], [], []
    for _ in range(args.repeat):
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        e0.record()
        h0 = time.perf_counter()
        out = fwd(blocks, freqs, x)
        h1 = time.perf_counter()
        e1.record()
        out.backward(g)
        h2 = time.perf_counter()
        e2.record()
        torch.cuda.synchronize()
        hf.append((h1 - h0) * 1e3)
        hb.append((h2 - h1) * 1e3)
        tf.append(e0.elapsed_time(e1))
        tb.append(e1.elapsed_time(e2))
        x.grad = None
        for b in blocks:
            for p in b.parameters():
                p.grad = None
    classes = {"fwd": {}, "bwd": {}}
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            with torch.profiler.record_function("fwd_marker"):
                pass
            out = fwd(blocks, freqs, x)
            torch.cuda.synchronize()
            with torch.profiler.record_function("bwd_marker"):
                pass
            out.backward(g)
            torch.cuda.synchronize()
            x.grad = None
            for b in blocks:
                for p in b.parameters():
                    p.grad = None
    ev = prof.events()
    # every pass starts with a marker on the host after a synchronize: a kernel belongs to the
    # last marker before it
    marks = sorted((e.time_range.start, e.name[:3]) for e in ev
                   if e.name in ("fwd_marker", "bwd_marker"))
    kernels = [e for e in ev if e.device_type == torch.autograd.DeviceType.CUDA]
    names = {}
    for k in kernels:
        t = k.time_range.start
        phase = None
        for m, ph in marks:
            if t >= m:
                phase = ph
        if phase is None:
            continue
        c = klass(k.name)
        classes[phase][c] = classes[phase].get(c, 0.0) + k.time_range.elapsed_us()
        key = (phase, c, k.name[:90])
        names.setdefault(key, [0, 0.0])
        names[key][0] += 1
        names[key][1] += k.time_range.elapsed_us()
    per = 2 * args.layers * 1000.0  # us -> ms per layer
    counts = {"fwd": 0, "bwd": 0}
    for (p, c, n), (cnt, us) in names.items():
        counts[p] += cnt
    res = {"fwd_ms_per_layer": statistics.median(tf) / args.layers,
           "bwd_ms_per_layer": statistics.median(tb) / args.layers,
           "host_fwd_ms_per_layer": statistics.median(hf) / args.layers,
           "host_bwd_ms_per_layer": statistics.median(hb) / args.layers,
           "kernels_per_layer": {p: v / (2 * args.layers) for p, v in counts.items()},
           "classes_ms_per_layer": {p: {c: v / per for c, v in d.items()} for p, d in classes.items()},
           "top_kernels": sorted(([p, c, n, cnt / (2 * args.layers), us / per]
                                  for (p, c, n), (cnt, us) in names.items()),
                                 key=lambda r: -r[4])[:40]}
    del blocks
    torch.cuda.empty_cache()
    return res


def main():
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "layers": args.layers, "repeat": args.repeat, "specs": {}}
    for spec in args.specs.split(","):
        name, seq, mbs = spec.split(":")
        seq, mbs = int(seq), int(mbs)
        r = {}
        for mode in args.modes.split(","):
            r[mode] = run(name, seq, mbs, mode)
            print(spec, mode, "fwd %.3f bwd %.3f ms/layer (host %.3f / %.3f) kernels %s" % (
                r[mode]["fwd_ms_per_layer"], r[mode]["bwd_ms_per_layer"],
                r[mode]["host_fwd_ms_per_layer"], r[mode]["host_bwd_ms_per_layer"],
                json.dumps(r[mode]["kernels_per_layer"])),
                  json.dumps(r[mode]["classes_ms_per_layer"]), flush=True)
        out["specs"][spec] = r
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, args.out)


main()
