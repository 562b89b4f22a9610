#!/usr/bin/env python3
"""Ring attention's own cost under PyTorch's context_parallel, measured on 2 GPUs.

Why: plan's estimate of torchtitan context parallelism was 25% optimistic on the held-out
4 x H200 CP 4 run (bench/results/heldout_2026-11-27/README.md). The cost model priced the
ring's attention as the full causal work over cp at the one-GPU rate, plus a K/V exchange hidden
behind it. This script times, for one Llama-like attention layer (bf16, b = 1), forward and
backward of

  full  F.scaled_dot_product_attention(is_causal=True) over the whole sequence on one GPU
  cp2   the same call inside torch.distributed.tensor.experimental.context_parallel over 2 GPUs
        (head-tail load balancing, the rotate method named), each GPU's own time

with the same SDPA backend (sdpa_kernel([backend])), CUDA events, warm-up, medians. The ideal
CP 2 time is full / 2; what is over it is the ring's overhead. One iteration of chosen cases is
also profiled (torch.profiler, rank 0's Chrome trace gzipped under $OUT/traces.tar) to say where
the overhead goes: SDPA chunk kernels, the fp32 merges (elementwise, cat, fill), NCCL, idle.

K/V heads: 'gqa' passes K/V with kv heads and enable_gqa=True (torchtitan's ScaledDotProduct
Attention since 2026); 'rep' passes K/V repeated to all heads (bench/realruns/native_llama.py's
repeat_kv, what parallel_run.py --layout cp ran).

Usage (device machine, 2 GPUs):
  torchrun --nproc_per_node 2 bench/cp_ring_micro.py --out $OUT
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tarfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--seqs", default="8192,16384,32768")
p.add_argument("--shapes", default="h32kv8d128gqa,h32kv8d128rep,h32kv8d64rep")
p.add_argument("--backends", default="flash,cudnn")
p.add_argument("--rotates", default="alltoall,allgather")
p.add_argument("--trace-all-ranks", action="store_true", help="every rank writes its trace")
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--reps", type=int, default=10)
p.add_argument("--profile", default="32768:h32kv8d128rep:flash:alltoall,"
               "32768:h32kv8d128gqa:flash:allgather,32768:h32kv8d64rep:flash:alltoall,"
               "32768:h32kv8d128rep:flash:full,32768:h32kv8d64rep:flash:full")
args = p.parse_args()

dist.init_process_group("nccl")
RANK, WS = dist.get_rank(), dist.get_world_size()
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
torch.cuda.set_device(dev)
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor.experimental import context_parallel  # noqa: E402
import torch.distributed.tensor.experimental._attention as cpa  # noqa: E402

mesh = init_device_mesh("cuda", (WS,), mesh_dim_names=("cp",))
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}
os.makedirs(args.out, exist_ok=True)
log = open(os.path.join(args.out, "log-rank%d.txt" % RANK if RANK else "log.txt"), "a")


def say(*a):
    s = " ".join(str(x) for x in a)
    log.write(s + "\n")
    log.flush()
    if RANK == 0:
        print(s, flush=True)


def shape_of(name):  # h32kv8d128gqa
    h = int(name[1:name.index("kv")])
    kv = int(name[name.index("kv") + 2:name.index("d")])
    d = int(name[name.index("d") + 1:-3])
    return h, kv, d, name.endswith("gqa")


def tensors(s, name, seed):
    h, kv, d, gqa = shape_of(name)
    g = torch.Generator(device=dev).manual_seed(seed)
    q = torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16, generator=g)
    kvh = kv if gqa else h
    k0 = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16, generator=g)
    v0 = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16, generator=g)
    if kvh != kv:  # native_llama.repeat_kv: each kv head serves h/kv query heads
        k0 = k0.repeat_interleave(h // kv, dim=1)
        v0 = v0.repeat_interleave(h // kv, dim=1)
    go = torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16, generator=g)
    return q, k0.contiguous(), v0.contiguous(), go, gqa


def set_rotate(m):
    cpa.set_rotate_method(m)


def run_iters(fn, n_warm, n_rep):
    """fn() runs forward (returns out) ; times fwd, bwd with events; host issue times."""
    f, b, hf, hb = [], [], [], []
    for i in range(n_warm + n_rep):
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        e0.record()
        t0 = time.perf_counter()
        out, go, leaves = fn()
        t1 = time.perf_counter()
        e1.record()
        out.backward(go)
        t2 = time.perf_counter()
        e2.record()
        torch.cuda.synchronize()
        for x in leaves:
            x.grad = None
        if i >= n_warm:
            f.append(e0.elapsed_time(e1) / 1e3)
            b.append(e1.elapsed_time(e2) / 1e3)
            hf.append(t1 - t0)
            hb.append(t2 - t1)
    return f, b, hf, hb


def med(x):
    return statistics.median(x) if x else None


def gather_max(v):
    t = torch.tensor([v], device=dev, dtype=torch.float64)
    ts = [torch.zeros_like(t) for _ in range(WS)]
    dist.all_gather(ts, t)
    return [float(x.item()) for x in ts]


def profile_case(tag, fn, lab):
    from torch.profiler import profile, ProfilerActivity, record_function
    torch.cuda.synchronize()
    dist.barrier()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("ring.fwd"):
            out, go, leaves = fn()
        with record_function("ring.bwd"):
            out.backward(go)
        torch.cuda.synchronize()
    for x in leaves:
        x.grad = None
    if RANK == 0 or args.trace_all_ranks:
        path = "/tmp/cptrace/trace-%s%s.json" % (lab, "-r%d" % RANK if args.trace_all_ranks else "")
        os.makedirs("/tmp/cptrace", exist_ok=True)
        prof.export_chrome_trace(path)
        with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
            shutil.copyfileobj(f, g)
        os.remove(path)


results = open(os.path.join(args.out, "results.jsonl"), "a") if RANK == 0 else None


def plain_launch_host_s(n=2000):
    """Host time of one plain eager launch on this machine: n in-place adds on a small tensor
    (the GPU finishes each in a few microseconds, so the host's issue time is what is timed)."""
    x = torch.zeros(1024, device=dev)
    for _ in range(200):
        x.add_(1.0)
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
        ts.append((time.perf_counter() - t0) / n)
        torch.cuda.synchronize()
    return med(ts)


PLAIN_LAUNCH_S = plain_launch_host_s()
prof_set = set(args.profile.split(",")) if args.profile else set()
facts = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
         "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()), "gpu": torch.cuda.get_device_name(dev),
         "world_size": WS, "plain_launch_host_s": PLAIN_LAUNCH_S, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "attention_module": cpa.__file__,
         "default_rotate": str(getattr(cpa, "_cp_options", None) and cpa._cp_options.rotate_method),
         "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                  "NVSHMEM_DISABLE_NVLS")}}
if RANK == 0:
    say("FACTS", json.dumps(facts))
    src = getattr(sys.modules.get(cpa.__name__), "__file__", None)
    try:
        import torch.distributed.tensor.experimental._context_parallel._attention as real
        shutil.copy(real.__file__, os.path.join(args.out, "torch_cp_attention.py"))  # to read; not committed
    except Exception as ex:  # older layout
        shutil.copy(src, os.path.join(args.out, "torch_cp_attention.py"))
        say("copied", src, ex)

for s in [int(x) for x in args.seqs.split(",")]:
    for shp in args.shapes.split(","):
        for bk in args.backends.split(","):
            q0, k0, v0, go0, gqa = tensors(s, shp, 1234)
            kw = {"is_causal": True}
            if gqa:
                kw["enable_gqa"] = True
            rec = {"seq": s, "shape": shp, "backend": bk}

            def full():
                q, k, v = (x.detach().clone().requires_grad_() for x in (q0, k0, v0))
                with sdpa_kernel([BACKENDS[bk]]):
                    out = F.scaled_dot_product_attention(q, k, v, **kw)
                return out, go0, (q, k, v)

            def full_wrapped():
                out, go, leaves = full()
                return out, go, leaves

            try:
                with sdpa_kernel([BACKENDS[bk]]):
                    f, b, hf, hb = run_iters(full_wrapped, args.warmup, args.reps)
                rec.update(full_fwd_s=med(f), full_bwd_s=med(b), full_fwd_s_all=f, full_bwd_s_all=b,
                           full_host_fwd_s=med(hf), full_host_bwd_s=med(hb))
                ref_out = full()[0].detach()
                if "%d:%s:%s:full" % (s, shp, bk) in prof_set:
                    profile_case("full", full, "full-%d-%s-%s" % (s, shp, bk))
            except Exception as ex:
                rec["full_error"] = repr(ex)[:300]
                ref_out = None
            for rot in args.rotates.split(","):
                r = dict(rec, rotate=rot)
                try:
                    set_rotate(rot)
                    q, k, v, go = (x.detach().clone() for x in (q0, k0, v0, go0))
                    with sdpa_kernel([BACKENDS[bk]]):
                        with context_parallel(mesh, buffers=[q, k, v, go], buffer_seq_dims=[2, 2, 2, 2],
                                              no_restore_buffers={q, k, v, go}):
                            def ring():
                                qq, kk, vv = (x.detach().requires_grad_() for x in (q, k, v))
                                out = F.scaled_dot_product_attention(qq, kk, vv, **kw)
                                return out, go, (qq, kk, vv)
                            f, b, hf, hb = run_iters(ring, args.warmup, args.reps)
                            # correctness: this rank's rows of the full output, head-tail order
                            out = ring()[0].detach()
                            if ref_out is not None:
                                c = ref_out.chunk(2 * WS, dim=2)
                                mine = torch.cat([c[RANK], c[2 * WS - 1 - RANK]], dim=2)
                                err = ((out.float() - mine.float()).norm() / mine.float().norm()).item()
                                r["rel_err_vs_full"] = max(gather_max(err))
                            lab = "%d:%s:%s:%s" % (s, shp, bk, rot)
                            if lab in prof_set:
                                profile_case("cp", ring, "cp%d-%d-%s-%s-%s" % (WS, s, shp, bk, rot))
                    r.update(cp_fwd_s=med(f), cp_bwd_s=med(b), cp_fwd_s_all=f, cp_bwd_s_all=b,
                             cp_host_fwd_s=med(hf), cp_host_bwd_s=med(hb))
                    r["cp_fwd_s_ranks"] = gather_max(med(f))
                    r["cp_bwd_s_ranks"] = gather_max(med(b))
                except Exception as ex:
                    r["cp_error"] = repr(ex)[:300]
                    dist.barrier()
                if RANK == 0:
                    if "full_fwd_s" in r and "cp_fwd_s" in r:
                        full_t = r["full_fwd_s"] + r["full_bwd_s"]
                        cp_t = max(a + c for a, c in zip(r["cp_fwd_s_ranks"], r["cp_bwd_s_ranks"]))
                        r["cp_over_ideal"] = cp_t / (full_t / WS)
                        say("seq %6d %-16s %-6s %-9s full f/b %.2f/%.2f ms  cp%d f/b %.2f/%.2f ms (ranks %s)  "
                            "cp/(full/%d) %.3f  host f/b %.2f/%.2f ms  err %.1e" % (
                                s, shp, bk, rot, 1e3 * r["full_fwd_s"], 1e3 * r["full_bwd_s"], WS,
                                1e3 * r["cp_fwd_s"], 1e3 * r["cp_bwd_s"],
                                ",".join("%.2f" % (1e3 * (a + c)) for a, c in
                                         zip(r["cp_fwd_s_ranks"], r["cp_bwd_s_ranks"])),
                                WS, r["cp_over_ideal"], 1e3 * r["cp_host_fwd_s"], 1e3 * r["cp_host_bwd_s"],
                                r.get("rel_err_vs_full", float("nan"))))
                    else:
                        say("seq %d %s %s %s: %s %s" % (s, shp, bk, rot, r.get("full_error", ""),
                                                        r.get("cp_error", "")))
                    results.write(json.dumps(dict(r, **{"facts": facts})) + "\n")
                    results.flush()
            del q0, k0, v0, go0
            torch.cuda.empty_cache()

dist.barrier()
if RANK == 0 and os.path.isdir("/tmp/cptrace"):
    with tarfile.open(os.path.join(args.out, "traces.tar"), "w") as t:
        for x in sorted(os.listdir("/tmp/cptrace")):
            t.add(os.path.join("/tmp/cptrace", x), arcname=x)
dist.barrier()
dist.destroy_process_group()
