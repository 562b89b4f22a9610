"""NCCL collectives through torch.distributed (one process per GPU), timed like `plan calibrate`
(backend/bk_coll.c): bf16, warm-up, CUDA events around back-to-back calls on every rank, the
slowest rank per repeat, median of repeats; algbw = size / time, busbw = algbw x nccl-tests' bus
factor. Sizes are nccl-tests' "size" (all_gather: the gathered output; reduce_scatter: the
input; all_to_all: each rank's send buffer; send_recv: the message, ring to the next rank).

Usage: NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 4 bench/torch_coll.py [--sizes 64M,256M,1G]
"""
import argparse
import os
import statistics

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--sizes", default="64M,256M,1G")
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--min-repeat-s", type=float, default=2e-3)
args = p.parse_args()

def parse(s):
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mul[s[-1]] if s[-1] in mul else int(s)

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl", device_id=torch.device("cuda", int(os.environ["LOCAL_RANK"])))
n = world
factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n,
          "reduce_scatter": (n - 1) / n, "all_to_all": (n - 1) / n, "send_recv": 1.0}

def make(op, size):
    count = size // 2
    count -= count % n
    chunk = count // n
    b = lambda c: torch.randint(1, 5, (c,), device="cuda").to(torch.bfloat16)
    if op == "all_reduce":
        # torch's all_reduce is in place: the sums grow over the repeats (to inf eventually),
        # which does not change NCCL's speed; plan calibrate runs it out of place and checks it.
        x = b(count)
        return (lambda: dist.all_reduce(x)), count * 2
    if op == "all_gather":
        x, y = b(chunk), torch.empty(count, device="cuda", dtype=torch.bfloat16)
        return (lambda: dist.all_gather_into_tensor(y, x)), count * 2
    if op == "reduce_scatter":
        x, y = b(count), torch.empty(chunk, device="cuda", dtype=torch.bfloat16)
        return (lambda: dist.reduce_scatter_tensor(y, x)), count * 2
    if op == "all_to_all":
        x, y = b(count), torch.empty(count, device="cuda", dtype=torch.bfloat16)
        return (lambda: dist.all_to_all_single(y, x)), count * 2
    x, y = b(count), torch.empty(count, device="cuda", dtype=torch.bfloat16)
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    def sr():
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, y, prv)])
        for r in reqs:
            r.wait()
    return sr, count * 2

e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
def timed(f, iters):
    dist.barrier()
    torch.cuda.synchronize()
    e0.record()
    for _ in range(iters):
        f()
    e1.record()
    torch.cuda.synchronize()
    t = torch.tensor([e0.elapsed_time(e1) / 1e3 / iters], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()

if rank == 0:
    print(f"torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, {n} ranks, "
          f"NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}")
for op in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"]:
    for s in args.sizes.split(","):
        f, size = make(op, parse(s))
        for _ in range(3):
            f()
        one = timed(f, 1)
        iters = max(5, min(100, int(args.min_repeat_s / one + 0.999)))
        ts = [timed(f, iters) for _ in range(args.repeats)]
        t = statistics.median(ts)
        if rank == 0:
            print(f"torch.distributed {op:14s} n={n} {size:>11d} B  time {t*1e3:9.4f} ms  "
                  f"algbw {size/t/1e9:7.1f} GB/s  busbw {size/t*factor[op]/1e9:7.1f} GB/s")
        del f
        torch.cuda.empty_cache()
dist.destroy_process_group()
