#!/usr/bin/env python3
"""One rank of torchtitan's Table 2 context parallelism (Llama 3.1 8B, 32k tokens a GPU), on one GPU.

Why (issue 19, bench/results/cp23_2026-11-29/README.md): torchtitan's published Table 2 rows at
CP 4 and CP 8 (32,768 tokens a GPU, global seq 131072 / 262144) are predicted 33-40% fast while
CP 2 fits. Every SDPA call one rank makes has the same shape at CP 2, 4 and 8 (a causal
32k x 32k block, then 32k x 16k or 16k x 32k unmasked half blocks under head-tail balancing),
so the model prices them at one rate. This script measures, on one GPU:

  A. which SDPA backend torch picks for the *global* shapes the DTensor wrapper carries
     (batch 1, 32 heads, seq 32k..256k, head dim 128, bf16, causal, grad), under
     sdpa_kernel([FLASH_ATTENTION, EFFICIENT_ATTENTION]) as torchtitan 9dec370 sets under CP;
  B. the per-chunk SDPA times at Table 2's local shapes, FLASH and EFFICIENT backends
     (forward, backward; CUDA events, warm-up, medians, random normal data);
  C. torch's own ring (context_parallel, all-gather rotation, head-tail balancing) for one rank
     of a CP group of c = 2, 4, 8 on a fake process group: the collectives are no-ops, every
     kernel of the rank runs (SDPA calls, merges, casts, cats); eager; plus the SDPA kernel
     names one iteration's profile shows;
  D. the same ring inside torch.compile(fullgraph=True) (as torchtitan compiles each block), for
     c = 2 and 4, if time is left.

Usage: python3 bench/cp23_chunks.py OUTDIR [deadline_s] [stages, default ABCD]
"""
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

OUT = sys.argv[1]
DEADLINE = time.time() + (float(sys.argv[2]) if len(sys.argv) > 2 else 45.0)
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
H, D, LOCAL = 32, 128, 32768
BF = torch.bfloat16
log = open(os.path.join(OUT, "results.jsonl"), "a")
FACTS = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev),
         "cuda": torch.version.cuda, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def rec(**kw):
    r = dict(FACTS, **kw)
    log.write(json.dumps(r) + "\n")
    log.flush()
    print(json.dumps(kw), flush=True)


def rnd(*shape, grad=True):
    t = torch.randn(*shape, device=dev, dtype=BF)
    return t.requires_grad_() if grad else t


def timed(fn, warm, reps):
    """fn() -> (out, go): forward; returns medians of forward and backward seconds."""
    f, b = [], []
    for i in range(warm + reps):
        e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        e[0].record()
        out, go = fn()
        e[1].record()
        out.backward(go)
        e[2].record()
        torch.cuda.synchronize()
        if i >= warm:
            f.append(e[0].elapsed_time(e[1]) / 1e3)
            b.append(e[1].elapsed_time(e[2]) / 1e3)
    return statistics.median(f), statistics.median(b), f, b


ALLOWED = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]

STAGES = sys.argv[3] if len(sys.argv) > 3 else "ABCD"
# A. backend choice on the global shapes
for s in [] if "A" not in STAGES else (32768, 65536, 131072, 262144):
    q = torch.empty(1, H, s, D, device=dev, dtype=BF).requires_grad_()
    with sdpa_kernel(ALLOWED):
        choice = torch._fused_sdp_choice(q, q, q, None, 0.0, True)
    rec(stage="A", global_seq=s, backend=SDPBackend(choice).name)
    del q
torch.cuda.empty_cache()

# B. per-chunk SDPA times at the local shapes (Table 2: 32k tokens a GPU)
shapes = [("diag_causal", LOCAL, LOCAL, True), ("row_half", LOCAL, LOCAL // 2, False),
          ("col_half", LOCAL // 2, LOCAL, False)]
for bk in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION) if "B" in STAGES else ():
    for name, sq, sk, causal in shapes:
        q, k, v = rnd(1, H, sq, D), rnd(1, H, sk, D), rnd(1, H, sk, D)
        go = torch.randn(1, H, sq, D, device=dev, dtype=BF)

        def call():
            with sdpa_kernel([bk]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal), go
        ff, fb, fl, bl = timed(call, 2, 5)
        q.grad = k.grad = v.grad = None
        mult = 0.5 if causal else 1.0
        fl_fwd = 4.0 * H * sq * sk * D * mult
        rec(stage="B", backend=bk.name, shape=name, sq=sq, sk=sk, causal=causal, fwd_s=ff,
            bwd_s=fb, fwd_tflops=fl_fwd / ff / 1e12, bwd_tflops=2.5 * fl_fwd / fb / 1e12,
            fwd_all=fl, bwd_all=bl)
        del q, k, v, go
torch.cuda.empty_cache()

# C/D. torch's ring for one rank on a fake process group
from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: E402
from torch.distributed.device_mesh import DeviceMesh  # noqa: E402
from torch.distributed.tensor.experimental import context_parallel  # noqa: E402
from torch.distributed.tensor.experimental._attention import set_rotate_method  # noqa: E402

set_rotate_method("allgather")


def ring_case(c, rank, compiled, warm, reps):
    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=c)
    mesh = DeviceMesh("cuda", torch.arange(c))
    q, k, v = rnd(1, H, LOCAL, D), rnd(1, H, LOCAL, D), rnd(1, H, LOCAL, D)
    go = torch.randn(1, H, LOCAL, D, device=dev, dtype=BF)

    def attn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    fn = torch.compile(attn, fullgraph=True) if compiled else attn

    def call():
        return fn(q, k, v), go
    t0 = time.time()
    pos = torch.zeros(1, LOCAL * c, device=dev)  # a sequence buffer for the context to shard
    with sdpa_kernel(ALLOWED), context_parallel(mesh, buffers=[pos], buffer_seq_dims=[1]):
        ff, fb, fl, bl = timed(call, warm, reps)
        names = {}
        if not compiled:
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                out, _ = call()
                out.backward(go)
                torch.cuda.synchronize()
            for ev in prof.key_averages():
                if ev.device_type == torch.autograd.DeviceType.CUDA and (
                        "flash" in ev.key.lower() or "fmha" in ev.key.lower()
                        or "attention" in ev.key.lower()):
                    names[ev.key[:90]] = ev.count
    rec(stage="D" if compiled else "C", cp=c, rank=rank, global_seq=LOCAL * c, fwd_s=ff, bwd_s=fb,
        per_unit_s=(ff + fb) / c, fwd_all=fl, bwd_all=bl, wall_s=time.time() - t0,
        sdpa_kernels=names)
    del q, k, v, go
    torch.cuda.empty_cache()


for c, rank in ((2, 1), (4, 3), (8, 7), (8, 0)) if "C" in STAGES else ():
    if time.time() > DEADLINE - 8:
        rec(stage="C", skipped=f"cp {c} rank {rank}: deadline")
        continue
    try:
        ring_case(c, rank, False, 1, 3)
    except Exception as ex:  # record and go on
        import traceback
        rec(stage="C", cp=c, rank=rank, error=repr(ex)[:400], tb=traceback.format_exc()[-1500:])

for c in (2, 4) if "D" in STAGES else ():
    if time.time() > DEADLINE - 20:
        rec(stage="D", skipped=f"cp {c}: deadline")
        continue
    try:
        ring_case(c, c - 1, True, 1, 3)
    except Exception as ex:
        rec(stage="D", cp=c, error=repr(ex)[:400])
