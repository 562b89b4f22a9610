"""Collective bandwidth through torch.distributed (NCCL), one process per GPU, timed with CUDA events.

Why: issue 24 sets `plan calibrate`'s collective busbw beside what a PyTorch trainer gets from the
same NCCL calls, on the same GPUs, in the same call. Same sizes and definitions as plan calibrate
and nccl-tests: `bytes` is nccl-tests' size (all-reduce / broadcast: the buffer; all-gather: the
gathered output; reduce-scatter: the input; all-to-all: each rank's send buffer; send/recv: the
message), bf16 random data (never zeros), out of place (all-reduce in place: torch has no
out-of-place all_reduce), busbw = algbw x nccl-tests' bus factor (all-reduce 2(n-1)/n, all-gather,
reduce-scatter and all-to-all (n-1)/n, broadcast and send/recv 1).

Method (METHOD.md): per op and size, 5 warm-up calls, a probe that sizes a repeat to >= 2 ms of
back-to-back calls (the same count on every rank), then --repeats repeats, each started after a
barrier and a device sync, timed with CUDA events around the repeat's calls on the NCCL stream's
issuing (current) stream; time = repeat time / calls; a repeat's time is the slowest rank's
(all_reduce MAX), the median over repeats is kept, and the spread (max-min)/median.
Ops: all_reduce (dist.all_reduce), all_gather (all_gather_into_tensor), reduce_scatter
(reduce_scatter_tensor), all_to_all (all_to_all_single), broadcast (root 0), send_recv (ring:
every rank sends to rank+1 and receives from rank-1 with batch_isend_irecv).

Usage: NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 4 bench/coll_torch.py --max-bytes 1G -o coll.csv
"""
import argparse
import csv
import os
import statistics
import sys

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--min-bytes", default="1K")
p.add_argument("--max-bytes", default="1G")
p.add_argument("--factor", type=int, default=4)
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--min-repeat-s", type=float, default=0.002)
p.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,send_recv")
p.add_argument("-o", "--output", default="coll_torch.csv")
args = p.parse_args()


def parse_size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * m[s[-1].upper()] if s[-1].upper() in m else int(s)


BUS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
       "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
       "broadcast": lambda n: 1.0, "send_recv": lambda n: 1.0}


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, n = dist.get_rank(), dist.get_world_size()
    sizes = []
    s = parse_size(args.min_bytes)
    while s <= parse_size(args.max_bytes):
        sizes.append(s)
        s *= args.factor
    rows = []
    gen = torch.Generator(device=dev).manual_seed(1 + rank)

    def rnd(count):
        return torch.randn(count, device=dev, dtype=torch.bfloat16, generator=gen)

    for op in args.ops.split(","):
        for size in sizes:
            count = max(n, (size // 2) // n * n)  # whole chunks per rank, bf16
            nbytes = count * 2
            if op == "all_reduce":
                buf = rnd(count)
                fn = lambda: dist.all_reduce(buf)  # noqa: E731
            elif op == "all_gather":
                inp, out = rnd(count // n), torch.empty(count, device=dev, dtype=torch.bfloat16)
                fn = lambda: dist.all_gather_into_tensor(out, inp)  # noqa: E731
            elif op == "reduce_scatter":
                inp, out = rnd(count), torch.empty(count // n, device=dev, dtype=torch.bfloat16)
                fn = lambda: dist.reduce_scatter_tensor(out, inp)  # noqa: E731
            elif op == "all_to_all":
                inp, out = rnd(count), torch.empty(count, device=dev, dtype=torch.bfloat16)
                fn = lambda: dist.all_to_all_single(out, inp)  # noqa: E731
            elif op == "broadcast":
                buf = rnd(count)
                fn = lambda: dist.broadcast(buf, src=0)  # noqa: E731
            elif op == "send_recv":
                inp, out = rnd(count), torch.empty(count, device=dev, dtype=torch.bfloat16)
                nxt, prv = (rank + 1) % n, (rank - 1) % n

                def fn():
                    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, inp, nxt),
                                                     dist.P2POp(dist.irecv, out, prv)]):
                        w.wait()
            else:
                sys.exit("coll_torch: unknown op %s" % op)
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            dist.barrier()
            torch.cuda.synchronize()
            ev0.record()
            fn()
            ev1.record()
            torch.cuda.synchronize()
            t1 = torch.tensor([ev0.elapsed_time(ev1) / 1e3], device=dev, dtype=torch.float64)
            dist.all_reduce(t1, op=dist.ReduceOp.MAX)
            calls = int(min(1000, max(1, args.min_repeat_s / max(t1.item(), 1e-7))))
            reps = []
            for _ in range(args.repeats):
                dist.barrier()
                torch.cuda.synchronize()
                ev0.record()
                for _ in range(calls):
                    fn()
                ev1.record()
                torch.cuda.synchronize()
                t = torch.tensor([ev0.elapsed_time(ev1) / 1e3 / calls], device=dev, dtype=torch.float64)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                reps.append(t.item())
            med = statistics.median(reps)
            algbw = nbytes / med
            rows.append({"op": op, "dtype": "bf16", "bytes": nbytes, "group_size": n, "time_s": med,
                         "algbw_bytes_per_s": algbw, "busbw_bytes_per_s": algbw * BUS[op](n),
                         "calls_per_repeat": calls, "repeats": args.repeats,
                         "spread": (max(reps) - min(reps)) / med,
                         "in_place": op in ("all_reduce", "broadcast")})
            if rank == 0:
                print("coll_torch n=%d %-15s %11d B  %10.2f us  busbw %7.2f GB/s" % (
                    n, op, nbytes, med * 1e6, algbw * BUS[op](n) / 1e9), flush=True)
            del fn
            torch.cuda.empty_cache()
    if rank == 0:
        with open(args.output, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        print("coll_torch: wrote %s (torch %s, NCCL %s)" % (
            args.output, torch.__version__, ".".join(map(str, torch.cuda.nccl.version()))))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
