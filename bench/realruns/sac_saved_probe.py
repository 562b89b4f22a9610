#!/usr/bin/env python3
"""What a native (torchtitan-style) block keeps for its backward, per token and layer, under no
checkpointing, torchtitan's op-level selective checkpointing (sac_policy.py, as realrun.py --sac op
applies it) and full checkpointing, each eager and (--compile-modes) under torch.compile of the
block as realrun.py --compile wraps it (fullgraph, after the checkpoint wrapper): the slope of torch.cuda.memory_allocated() after the blocks'
forward between two layer counts, so the input, the output and anything per-step cancel.

Why: plan's torchtitan SAC memory (costmodel/memory_activations.c, the per-op SAC branch) prices
the saved set by reading the policy: the block input, q, v, the SDPA outputs, w1's and w2's outputs.
The single-GPU SAC runs (ho13..ho20) are all over-predicted by 0.3-7.2% while the runs without
checkpointing are within ~1%: this measures the saved set directly. It also logs which ops ran in
one SAC block's forward (the SDPA backend, the matmul count) and each saved op's output bytes.

One GPU; bf16 parameters (the unsharded FSDP2 compute copy), bf16 input of requires_grad=True.
  python3 bench/realruns/sac_saved_probe.py --config llama-3.1-8b --seq 4096 --mbs 4 --out FILE
Writes one JSON line per (config, mode) to --out (appending) and prints it.
"""
import argparse
import json
import os
import sys
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from native_llama import Args, TransformerBlock, precompute_freqs_cis  # noqa: E402
from sac_policy import sac_context_fn  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--config", required=True)
ap.add_argument("--seq", type=int, default=4096)
ap.add_argument("--mbs", type=int, default=1)
ap.add_argument("--layers", default="1,3", help="two layer counts; the slope is per layer")
ap.add_argument("--modes", default="none,sac,full", help="of none, sac, full, compile, compile_sac")
ap.add_argument("--out", default="")
args = ap.parse_args()

path = args.config if os.path.exists(args.config) else os.path.join(HERE, "configs", args.config + ".json")
with open(path) as f:
    CFG = json.load(f)
A = Args(CFG, 1)
dev = torch.device("cuda")
torch.manual_seed(0)
freqs = precompute_freqs_cis(A.head_dim, args.seq, A.theta, A.rope_scaling).to(dev)


class OpLog(TorchDispatchMode):
    """The aten ops of one forward, in order, with their outputs' bytes."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, a=(), kw=None):
        out = func(*a, **(kw or {}))
        flat = out if isinstance(out, (tuple, list)) else (out,)
        b = sum(t.numel() * t.element_size() for t in flat if isinstance(t, torch.Tensor))
        self.ops.append((str(func), b))
        return out


def blocks(n, mode):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    out = []
    for _ in range(n):
        with torch.device(dev):
            b = TransformerBlock(A).to(torch.bfloat16)
        with torch.no_grad():
            for p in b.parameters():
                p.normal_(0.0, 0.02)
        if mode.endswith("sac"):
            b = checkpoint_wrapper(b, context_fn=sac_context_fn, preserve_rng_state=False)
        elif mode == "full":
            b = checkpoint_wrapper(b, preserve_rng_state=False)
        if mode.startswith("compile"):
            b = torch.compile(b, fullgraph=True)
        out.append(b)
    return out


def saved_bytes(n, mode):
    """memory held after the forward of n blocks, less the output (the input exists before)."""
    bl = blocks(n, mode)
    x = torch.randn(args.mbs, args.seq, A.dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
    torch.cuda.synchronize()
    m0 = torch.cuda.memory_allocated()
    if mode.startswith("compile"):  # compile outside the measured forward (same shapes)
        h = x.detach().requires_grad_(True)
        for b in bl:
            h = b(h, freqs)
        h.float().pow(2).mean().backward()
        del h
        torch.cuda.synchronize()
        m0 = torch.cuda.memory_allocated()
    h = x
    for b in bl:
        h = b(h, freqs)
    torch.cuda.synchronize()
    m1 = torch.cuda.memory_allocated()
    held = m1 - m0 - h.numel() * h.element_size()
    h.float().pow(2).mean().backward()  # the forward's saved set is usable: run its backward
    torch.cuda.synchronize()
    ok = bool(torch.isfinite(x.grad).all())
    del bl, x, h
    torch.cuda.empty_cache()
    return held, ok


def op_log(mode):
    bl = blocks(1, mode)
    x = torch.randn(args.mbs, args.seq, A.dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
    with OpLog() as log:
        bl[0](x, freqs)
    del bl, x
    torch.cuda.empty_cache()
    return log.ops


tokens = args.mbs * args.seq
la, lb = (int(v) for v in args.layers.split(","))
for mode in args.modes.split(","):
    t0 = time.time()
    ha, oka = saved_bytes(la, mode)
    hb, okb = saved_bytes(lb, mode)
    per_layer = (hb - ha) / (lb - la)
    rec = {"config": args.config, "seq": args.seq, "mbs": args.mbs, "mode": mode,
           "layers": [la, lb], "held_bytes": [ha, hb], "saved_bytes_per_layer": per_layer,
           "saved_bytes_per_token_layer": per_layer / tokens,
           "in_hidden_units": per_layer / tokens / A.dim, "backward_ok": oka and okb,
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "wall_s": round(time.time() - t0, 2)}
    if mode == "sac":
        ops = op_log(mode)
        rec["forward_ops"] = [o for o, _ in ops]
        rec["mm_count"] = sum(1 for o, _ in ops if o == "aten.mm.default")
        rec["sdpa_ops"] = sorted({o for o, _ in ops if "attention" in o})
    line = json.dumps(rec)
    print(json.dumps({k: v for k, v in rec.items() if k != "forward_ops"}))
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")
