"""The copies torch's functional collectives add around sequence-parallel TP, measured (issue 19).

torchtitan's TP plan keeps activations sharded on the sequence (Shard(1) of [batch, seq, hidden])
between blocks. DTensor turns Shard(1) -> Replicate into funcol.all_gather_tensor(gather_dim=1)
and Partial -> Shard(1) into funcol.reduce_scatter_tensor(scatter_dim=1). NCCL gathers and
scatters along dim 0 only, so torch/distributed/_functional_collectives.py rearranges:
  - all_gather_tensor: torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim), or a view
    when res.shape[0] == group_size (torch/_utils.py _maybe_view_chunk_cat: batch 1);
  - reduce_scatter_tensor: self = torch.cat(torch.chunk(self, group_size, dim=scatter_dim))
    before the collective, whatever the batch.
Each copy reads and writes the whole gathered [b, s, h] tensor. This script measures, on the
TP group of all ranks (torchrun, one process per GPU):
  A. eager funcol: all-gather along dim 1 vs dim 0, reduce-scatter along dim 1 vs dim 0 (same
     bytes on the wire): the difference is the copy; and the chunk-cat copy alone (its rate);
  B. a torchtitan-style pair ColwiseParallel(input Shard(1)) -> RowwiseParallel(output Shard(1))
     (the SP all-gather entering and the reduce-scatter leaving a block), forward + backward,
     eager and torch.compile'd: every kernel of one profiled call by name and class, so the copy
     kernels are counted where they run.
Batch 1, 2 and 6 at seq 8192, hidden 4096 (Llama-3.1-8B), bf16, random data.

Usage: NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 4 bench/tp_chunk_cat.py --out DIR
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--seq", type=int, default=8192)
p.add_argument("--hidden", type=int, default=4096)
p.add_argument("--ffn", type=int, default=14336)
p.add_argument("--batches", default="1,2,6")
p.add_argument("--iters", type=int, default=10)
a = p.parse_args()

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
torch.cuda.set_device(dev)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
import torch.distributed._functional_collectives as funcol

mesh = init_device_mesh("cuda", (world,))
group = mesh.get_group()


def timed(fn, iters=a.iters, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        torch.cuda.synchronize()
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 1e-3)
    # the slowest rank sets the pace
    t = torch.tensor([statistics.median(ts)], device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def classify(name):
    n = name.lower()
    if "nccl" in n:
        return "nccl"
    if any(k in n for k in ("gemm", "cutlass", "nvjet", "sm90_xmma", "cublas", "matmul")):
        return "gemm"
    if "cat" in n or "chunk" in n:
        return "cat_copy"
    if "triton" in n:
        return "triton_other"
    if "copy" in n or "elementwise" in n or "memcpy" in n:
        return "copy_other"
    return "other"


def kernels(fn):
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows, by_class = [], {}
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None)
        if t is None:
            t = ev.cuda_time_total
        if t <= 0:
            continue
        c = classify(ev.key)
        rows.append({"name": ev.key[:160], "calls": ev.count, "us": round(t, 1), "class": c})
        by_class[c] = round(by_class.get(c, 0.0) + t, 1)
    rows.sort(key=lambda r: -r["us"])
    return {"by_class_us": by_class, "kernels": rows[:40]}


S, H, F = a.seq, a.hidden, a.ffn
res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "command": " ".join(sys.argv), "world": world, "seq": S, "hidden": H, "ffn": F,
       "torch": torch.__version__, "cuda": torch.version.cuda,
       "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
       "gpu": torch.cuda.get_device_name(dev), "micro": [], "block": []}
try:
    res["nvidia_smi"] = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit", "--format=csv,noheader"],
        capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
except Exception:
    pass

for b in [int(x) for x in a.batches.split(",")]:
    g = torch.Generator(device=dev).manual_seed(1234 + rank)
    x = torch.randn(b, S // world, H, device=dev, dtype=torch.bfloat16, generator=g)
    y = torch.randn(b, S, H, device=dev, dtype=torch.bfloat16, generator=g)
    full_bytes = b * S * H * 2
    # A. eager funcol, same bytes on the wire along dim 0 and dim 1
    # "* 1" waits on the AsyncCollectiveTensor in both variants (one equal elementwise pass)
    ag1 = timed(lambda: funcol.all_gather_tensor(x, 1, group) * 1)
    ag0m = timed(lambda: funcol.all_gather_tensor(x, 0, group) * 1)
    yv = y.view(b * S, H)
    rs0 = timed(lambda: funcol.reduce_scatter_tensor(yv, "sum", 0, group) * 1)
    rs1 = timed(lambda: funcol.reduce_scatter_tensor(y, "sum", 1, group) * 1)
    gathered = torch.randn(world * b, S // world, H, device=dev, dtype=torch.bfloat16, generator=g)
    cat = timed(lambda: torch.cat(torch.chunk(gathered, world, dim=0), dim=1))
    # check: dim-1 gather equals the rearranged dim-0 gather
    r0 = funcol.all_gather_tensor(x, 0, group) * 1
    r1 = funcol.all_gather_tensor(x, 1, group) * 1
    ok = bool(torch.equal(torch.cat(torch.chunk(r0, world, 0), 1), r1))
    m = {"batch": b, "gathered_bytes": full_bytes,
         "ag_dim0_s": ag0m, "ag_dim1_s": ag1, "rs_dim0_s": rs0, "rs_dim1_s": rs1,
         "chunk_cat_s": cat, "chunk_cat_bytes_per_s": 2 * full_bytes / cat,
         "ag_extra_s": ag1 - ag0m, "rs_extra_s": rs1 - rs0, "check_dim1_equals_rearranged_dim0": ok}
    res["micro"].append(m)
    del gathered, y, yv

    # B. Colwise(in Shard(1)) -> Rowwise(out Shard(1)), fwd + bwd, eager and compiled
    for comp in (False, True):
        torch._dynamo.reset()
        blk = nn.Sequential()
        blk.add_module("w1", nn.Linear(H, F, bias=False))
        blk.add_module("w2", nn.Linear(F, H, bias=False))
        blk = blk.to(dev, torch.bfloat16)
        torch.manual_seed(0)
        for prm in blk.parameters():
            nn.init.normal_(prm, std=0.02)
        parallelize_module(blk, mesh, {
            "w1": ColwiseParallel(input_layouts=Shard(1)),
            "w2": RowwiseParallel(output_layouts=Shard(1)),
        })
        fwd = torch.compile(blk) if comp else blk
        xin = x.clone().requires_grad_(True)
        gout = torch.randn(b, S // world, H, device=dev, dtype=torch.bfloat16, generator=g)

        def step():
            out = fwd(xin)
            out.backward(gout)

        t = timed(step, iters=6)
        kk = kernels(step)
        res["block"].append({"batch": b, "compiled": comp, "step_s": t, **kk})
        del blk, fwd, xin, gout
    torch.cuda.empty_cache()

if rank == 0:
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "tp_chunk_cat.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("batch  AG d0 ms  AG d1 ms  RS d0 ms  RS d1 ms  cat ms  cat GB/s  check")
    for m in res["micro"]:
        print(f"{m['batch']:5d} {m['ag_dim0_s']*1e3:9.3f} {m['ag_dim1_s']*1e3:9.3f} {m['rs_dim0_s']*1e3:9.3f} "
              f"{m['rs_dim1_s']*1e3:9.3f} {m['chunk_cat_s']*1e3:7.3f} {m['chunk_cat_bytes_per_s']/1e9:8.0f}  {m['check_dim1_equals_rearranged_dim0']}")
    for blk in res["block"]:
        print("block b", blk["batch"], "compiled" if blk["compiled"] else "eager",
              f"{blk['step_s']*1e3:.3f} ms", json.dumps(blk["by_class_us"]))
        for k in blk["kernels"][:8]:
            print("   ", k["calls"], k["us"], k["class"], k["name"][:90])
dist.destroy_process_group()
