#!/usr/bin/env python3
"""CUDA-event timing of PyTorch's ring attention inside a real parallel_run.py --layout cp step.

Why (issue 19): torch.profiler records only part of the kernels under context_parallel
(bench/results/tt13_2026-11-28 section 3), so the GPU time of the ring inside the real step was
never measured. This wrapper patches torch 2.11's
torch/distributed/tensor/experimental/_context_parallel/_attention.py module globals
_templated_ring_attention and _templated_ring_attention_backward (and any functools.partial
bound to them) with a wrapper that records, on the current stream, a CUDA event pair around the
whole ring call and around every SDPA call it makes (the `op` argument), with the q/k shapes and
the host's perf_counter around each. It also puts CUDA events at every decoder block's forward
start/end (module hooks). Then it runs parallel_run.py unchanged (runpy, the same argv).
At exit each rank writes $CP_EVENTS_OUT/cp_events_rank<r>.json: per call kind, the medians over
the calls of the last --steps steps (the events of warm-up steps are dropped by count).

CP_EVENTS_TIMELINE=1 (cp16) adds cp_timeline.py: every call on every rank, host and GPU on one
clock, the ring's exchanges and waits, Python's garbage collections (timeline_rank<r>.json).

Usage: torchrun --nproc_per_node 2 bench/realruns/cp_ring_events.py <parallel_run.py args>
"""
import atexit
import functools
import json
import os
import runpy
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.exists(os.path.join(HERE, "parallel_run.py")):  # run from a copy (device carry folder)
    HERE = os.path.join(os.getcwd(), "bench", "realruns")
sys.path.insert(0, HERE)
import torch.distributed.tensor.experimental._context_parallel._attention as A  # noqa: E402

TIMELINE = os.environ.get("CP_EVENTS_TIMELINE") == "1"  # cp_timeline.py: every call, both ranks
if TIMELINE:
    import prun_measure  # noqa: E402
    import cp_timeline  # noqa: E402
    cp_timeline.install(prun_measure)

REC = []  # (kind, start_event, end_event, host_s, meta)


def ev():
    return torch.cuda.Event(enable_timing=True)


def timed_op(op, kind):
    def w(*a, **k):
        s, e = ev(), ev()
        t0 = time.perf_counter()
        s.record()
        r = op(*a, **k)
        e.record()
        if TIMELINE:
            cp_timeline.TL.append(("sdpa", kind, t0, s, len(cp_timeline.ANCHORS) - 1))
            cp_timeline.TL.append(("sdpa.end", kind, time.perf_counter(), e, len(cp_timeline.ANCHORS) - 1))
        meta = {"q": list(a[0].shape) if a else None, "k": list(a[1].shape) if len(a) > 1 else None,
                "is_causal": k.get("is_causal")}
        REC.append((kind, s, e, time.perf_counter() - t0, meta))
        return r
    return w


def timed_ring(fn, kind):
    def w(*a, **k):
        a = list(a)
        if "op" in k:
            k["op"] = timed_op(k["op"], kind + ".sdpa")
        elif len(a) > 2 and callable(a[2]):
            a[2] = timed_op(a[2], kind + ".sdpa")
        s, e = ev(), ev()
        t0 = time.perf_counter()
        s.record()
        if TIMELINE:
            cp_timeline.CTX["ring"] = kind
            cp_timeline.TL.append((kind, "start", t0, s, len(cp_timeline.ANCHORS) - 1))
        r = fn(*a, **k)
        e.record()
        if TIMELINE:
            cp_timeline.TL.append((kind, "end", time.perf_counter(), e, len(cp_timeline.ANCHORS) - 1))
            cp_timeline.CTX["ring"] = ""
        REC.append((kind, s, e, time.perf_counter() - t0, {}))
        return r
    return w


orig_f, orig_b = A._templated_ring_attention, A._templated_ring_attention_backward
for name, val in list(vars(A).items()):
    for orig, kind in ((orig_f, "ring.fwd"), (orig_b, "ring.bwd")):
        if val is orig:
            setattr(A, name, timed_ring(orig, kind))
        elif isinstance(val, functools.partial) and val.func is orig:
            setattr(A, name, functools.partial(timed_ring(orig, kind), *val.args, **val.keywords))

# decoder blocks: forward start / end events (set once the model exists: patch prun_build.build)
import prun_build  # noqa: E402
_build = prun_build.build
_shard = prun_build.shard_blocks
OWN_GROUP = os.environ.get("CP_EVENTS_FSDP_OWN_GROUP") == "1"


def shard_blocks(model, mesh, *a, **k):
    """CP_EVENTS_FSDP_OWN_GROUP=1: FSDP2 on a process group of its own (a second NCCL
    communicator over the same ranks), so that its all-gathers and reduce-scatters no longer
    share one communicator, and so one issue order, with the ring's K/V and dK/dV exchanges.
    parallel_run.py's cp layout uses mesh["cp"] for both; a 1-D mesh over the whole world uses
    the default group."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh
    g = mesh.get_group()
    print("CPEV fsdp group is default group: %s; own group: %s" % (g is dist.distributed_c10d._get_default_group(),
                                                                  OWN_GROUP), flush=True)
    if OWN_GROUP:
        own = dist.new_group(list(range(dist.get_world_size())))
        mesh = DeviceMesh.from_group(own, "cuda", mesh_dim_names=("fsdp",))
    return _shard(model, mesh, *a, **k)


prun_build.shard_blocks = shard_blocks


def build(*a, **k):
    b = _build(*a, **k)
    layers = getattr(b.model, "layers", None)
    blocks = list(layers.values() if hasattr(layers, "values") else layers or [])
    for blk in blocks:
        def pre(mod, inp):
            mod._cp14_s = ev()
            mod._cp14_s.record()
            mod._cp14_t = time.perf_counter()

        def post(mod, inp, out):
            e = ev()
            e.record()
            REC.append(("block.fwd", mod._cp14_s, e, time.perf_counter() - mod._cp14_t, {}))
        blk.register_forward_pre_hook(pre)
        blk.register_forward_hook(post)
    return b


prun_build.build = build


def dump():
    try:
        torch.cuda.synchronize()
    except Exception:
        return
    rank = int(os.environ.get("RANK", 0))
    if TIMELINE:
        cp_timeline.dump(rank)
    steps = 6
    if "--steps" in sys.argv:
        steps = int(sys.argv[sys.argv.index("--steps") + 1])
    warm = 3
    if "--warmup" in sys.argv:
        warm = int(sys.argv[sys.argv.index("--warmup") + 1])
    by = {}
    for kind, s, e, h, meta in REC:
        key = kind + (" q%s k%s causal=%s" % (meta["q"], meta["k"], meta["is_causal"]) if meta else "")
        by.setdefault(key, []).append((s.elapsed_time(e) / 1e3, h))
    out = {"rank": rank, "warmup": warm, "steps": steps, "kinds": {}}
    for key, v in by.items():
        n_per_step = len(v) // (warm + steps) if len(v) >= warm + steps else 0
        tail = v[n_per_step * warm:] if n_per_step else v
        out["kinds"][key] = {"calls_total": len(v), "calls_per_step": n_per_step,
                             "gpu_s_median": statistics.median(x[0] for x in tail),
                             "gpu_s_sum_per_step": sum(x[0] for x in tail) / max(1, steps),
                             "host_s_median": statistics.median(x[1] for x in tail),
                             "gpu_s_p90": sorted(x[0] for x in tail)[int(0.9 * (len(tail) - 1))],
                             "gpu_s_max": max(x[0] for x in tail)}
    d = os.environ.get("CP_EVENTS_OUT", ".")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "cp_events_rank%d.json" % rank), "w") as f:
        json.dump(out, f, indent=1)
    if rank == 0:
        for key, x in sorted(out["kinds"].items()):
            print("CPEV %-70s n/step %3d gpu med %.3f p90 %.3f max %.3f ms sum/step %.1f ms host med %.3f ms" % (
                key, x["calls_per_step"], 1e3 * x["gpu_s_median"], 1e3 * x["gpu_s_p90"], 1e3 * x["gpu_s_max"],
                1e3 * x["gpu_s_sum_per_step"], 1e3 * x["host_s_median"]), flush=True)


atexit.register(dump)
sys.argv = [os.path.join(HERE, "parallel_run.py")] + sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
