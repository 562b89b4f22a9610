"""How much a GEMM slows while an NCCL collective runs beside it, and the collective while GEMMs
run beside it: the price of "overlapped" communication, measured.

Why: plan prices communication hidden behind compute (FSDP's all-gather / reduce-scatter behind
the neighbouring layer, Megatron's overlapped gradient reduce and parameter gather, the EP
all-to-all beside the other micro-batch) as free where it fits inside the compute. It is not:
NCCL's kernels hold SMs (one CTA per channel) and share HBM bandwidth with the GEMM. This script
measures both sides on the GPUs of one host, for the collectives the planner overlaps.

Method (METHOD.md): bf16 random data (never zeros); per GEMM shape and collective: the GEMM alone
(median of repeats of a batch of back-to-back GEMMs, CUDA events), the collective alone (median
of repeats), then the GEMM batch while a longer train of collectives runs on another stream (the
collectives launched first, the GEMM batch sized to about half their time so it runs entirely
beside them), and the collective train while a longer train of GEMMs runs beside it. Every
repeat starts after a barrier and a device sync; a repeat's time is the slowest rank's. The GEMM
result is checked against a float32 product once per shape (relative error < 1e-2). NCCL's
channel counts come from NCCL_DEBUG=INFO (the caller keeps stderr).

Usage: NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO torchrun --nproc_per_node 2 bench/overlap_contention.py \
           -o contention.json 2> nccl.log
"""
import argparse
import datetime
import json
import os
import statistics

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--coll-bytes", type=int, default=256 << 20)
p.add_argument("--repeats", type=int, default=9)
p.add_argument("--shapes", default="8192x8192x8192,4096x14336x4096,4096x4096x14336,4096x4096x4096")
p.add_argument("--ops", default="all_gather,reduce_scatter,all_to_all")
p.add_argument("-o", "--output", default="contention.json")
args = p.parse_args()

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
torch.cuda.set_device(dev)
comm = torch.cuda.Stream(device=dev)


def slowest(x):
    t = torch.tensor([x], device=dev, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def coll_buffers(op, nbytes):
    n = nbytes // 2  # bf16 elements of nccl-tests' size
    if op == "all_gather":  # size: the gathered output
        return torch.randn(n // world, device=dev, dtype=torch.bfloat16), \
            torch.empty(n, device=dev, dtype=torch.bfloat16)
    if op == "reduce_scatter":  # size: the input
        return torch.randn(n, device=dev, dtype=torch.bfloat16), \
            torch.empty(n // world, device=dev, dtype=torch.bfloat16)
    return torch.randn(n, device=dev, dtype=torch.bfloat16), \
        torch.empty(n, device=dev, dtype=torch.bfloat16)  # all_to_all: each rank's send buffer


def launch(op, src, dst):
    if op == "all_gather":
        return dist.all_gather_into_tensor(dst, src, async_op=True)
    if op == "reduce_scatter":
        return dist.reduce_scatter_tensor(dst, src, async_op=True)
    return dist.all_to_all_single(dst, src, async_op=True)


def coll_train(op, src, dst, k):
    """k collectives on the comm stream; returns (start, end) events on it."""
    with torch.cuda.stream(comm):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(comm)
        works = [launch(op, src, dst) for _ in range(k)]
        for w in works:
            w.wait()  # the comm stream waits for NCCL's stream
        e.record(comm)
    return s, e


def gemm_train(a, b, c, k):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(k):
        torch.matmul(a, b, out=c)
    e.record()
    return s, e


def timed(fn):
    """median over repeats of the slowest rank's per-call time (ms) of fn() -> (start, end, n)"""
    out = []
    for _ in range(args.repeats):
        dist.barrier()
        torch.cuda.synchronize()
        s, e, n = fn()
        torch.cuda.synchronize()
        out.append(slowest(s.elapsed_time(e) / n))
    return statistics.median(out), (max(out) - min(out)) / statistics.median(out)


results = []
for shape in args.shapes.split(","):
    m, n, k = (int(x) for x in shape.split("x"))
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    torch.matmul(a, b, out=c)
    ref = a.float() @ b.float()
    err = ((c.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, f"GEMM check failed: {err}"
    del ref
    for _ in range(5):
        torch.matmul(a, b, out=c)
    g1, _ = timed(lambda: (*gemm_train(a, b, c, 20), 20))
    for op in args.ops.split(","):
        src, dst = coll_buffers(op, args.coll_bytes)
        for _ in range(3):
            launch(op, src, dst).wait()
        torch.cuda.synchronize()
        c1, _ = timed(lambda: (*coll_train(op, src, dst, 5), 5))
        # GEMMs beside a train of collectives: a ~20 ms GEMM batch inside a train 3x its
        # unslowed time (room for a 1.5x slowdown of either side)
        kg = max(4, int(20.0 / g1))
        kc = max(4, int(3.0 * kg * g1 / c1) + 1)
        def gemm_beside():
            coll_train(op, src, dst, kc)
            s, e = gemm_train(a, b, c, kg)
            return s, e, kg
        g2, g2_spread = timed(gemm_beside)

        # collectives beside a train of GEMMs: a ~20 ms train of collectives inside GEMMs 3x as long
        kc2 = max(4, int(20.0 / c1))
        kg2 = max(4, int(3.0 * kc2 * c1 / g1) + 1)
        def coll_beside():
            gemm_train(a, b, c, kg2)  # on the current stream, launched first
            s, e = coll_train(op, src, dst, kc2)
            return s, e, kc2
        c2, c2_spread = timed(coll_beside)
        flops = 2.0 * m * n * k
        row = {"m": m, "n": n, "k": k, "op": op, "coll_bytes": args.coll_bytes, "world": world,
               "gemm_alone_ms": g1, "gemm_beside_ms": g2, "gemm_slowdown": g2 / g1,
               "gemm_alone_tflops": flops / g1 / 1e9, "coll_alone_ms": c1,
               "coll_beside_ms": c2, "coll_slowdown": c2 / c1,
               "busbw_alone_GBps": args.coll_bytes * (world - 1) / world / c1 / 1e6,
               "spread_gemm_beside": g2_spread, "spread_coll_beside": c2_spread,
               "gemm_check_rel_err": err, "gemms_per_repeat": kg, "colls_in_train": kc}
        results.append(row)
        if rank == 0:
            print(f"{m}x{n}x{k:<6} {op:15s} GEMM {g1:7.3f} -> {g2:7.3f} ms (x{g2 / g1:5.3f}) | "
                  f"{op} {c1:7.3f} -> {c2:7.3f} ms (x{c2 / c1:5.3f}) "
                  f"busbw {row['busbw_alone_GBps']:.0f} GB/s", flush=True)
        del src, dst

if rank == 0:
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "gpu": torch.cuda.get_device_name(dev), "sms": torch.cuda.get_device_properties(dev).multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
            "world": world, "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
            "command": "torchrun --nproc_per_node %d bench/overlap_contention.py" % world}
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "rows": results}, f, indent=1)
    os.replace(tmp, args.output)
dist.destroy_process_group()
