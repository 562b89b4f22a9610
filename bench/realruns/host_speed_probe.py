"""A fixed host-speed probe that every parallel_run.py record carries (issues 14, 19; tpck14 section 5,
tphosts17): eager TP steps are paced by the host, and machines of one kind issue the same DTensor
block 1.2-1.9x apart, so a record must say how fast its machine's host was. Two fixed loops, timed on
the host only (time.perf_counter; the GPU work is tiny and queued): `plain_op_us`, one eager
elementwise op on a small local bf16 tensor (what a bare launch costs), and `dtensor_op_us`, the same op
on a DTensor sharded over every rank (Shard(0) on a one-dimensional world mesh: sharding propagation
and dispatch, no collective). Each figure is the median over 7 rounds of 200 ops after one warm-up
round, per rank; the record keeps rank 0's and the largest over ranks. Run after the timed steps and
the memory fields, so neither is touched.
"""
import statistics
import time

import torch
import torch.distributed as dist


def _per_op_us(fn, n=200, rounds=7):
    fn(n)
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(n)
        out.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out)


def host_speed_probe(dev):
    """{"plain_op_us", "dtensor_op_us"} for rank 0 and the maximum over ranks ("*_max")."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    ws = dist.get_world_size()
    x = torch.randn(64 * ws, 256, device=dev, dtype=torch.bfloat16)
    loc = x[:64].clone()

    def plain(n):
        y = loc
        for _ in range(n):
            y = y.mul(1.0001)

    mesh = init_device_mesh("cuda", (ws,))
    dx = distribute_tensor(x, mesh, [Shard(0)])

    def dtens(n):
        y = dx
        for _ in range(n):
            y = y.mul(1.0001)

    p, d = _per_op_us(plain), _per_op_us(dtens)
    t = torch.tensor([p, d], device=dev, dtype=torch.float64)
    mx = t.clone()
    dist.all_reduce(mx, op=dist.ReduceOp.MAX)
    return {"plain_op_us": round(p, 2), "dtensor_op_us": round(d, 2),
            "plain_op_us_max": round(mx[0].item(), 2), "dtensor_op_us_max": round(mx[1].item(), 2),
            "note": "bench/realruns/host_speed_probe.py"}
