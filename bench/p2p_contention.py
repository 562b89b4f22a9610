"""How much a GEMM slows while Megatron-style pipeline send/receives run beside it, and the
send/receives while GEMMs run beside them: the price of overlap_p2p_comm, measured (issue 15).

Why: Megatron's interleaved schedule with overlap_p2p_comm=True issues the pipeline
send/receives asynchronously and waits for them only before the chunk that needs them
(megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving,
d98e8a6). plan's closed form charges them exposed; hiding them outright (bw13's experiment C)
makes every H100 micro-batch 3-6% too fast (mlm14). One candidate for the difference: NCCL's
send/recv kernels hold SMs (one CTA per channel) and HBM bandwidth while the GEMMs run.

What it does (2 ranks, torchrun): both ranks run a train of bf16 GEMMs on the default stream
(Megatron TP-shard shapes) while, on a second stream, they exchange activations the way
p2p_communication.py _p2p_ops does at d98e8a6 (lines 60-135): per exchange each rank issues
send_next + recv_prev + send_prev + recv_next as separate isend/irecv, even rank sends first,
odd rank receives first, and for a group of size 2 one direction goes through the WORLD group
(so the two directions use two communicators and can overlap). That is send_forward_recv_forward
plus send_backward_recv_backward outstanding together, the 1F1B steady state.

Method (METHOD.md): bf16 random data; GEMM checked against a float32 product once per shape;
CUDA events; median of repeats; each repeat after a barrier and device sync; a repeat's time is
the slowest rank's. GEMM alone; exchange alone; the GEMM batch (~20 ms) inside a train of
exchanges 3x as long (both launched, exchanges first); the exchange train (~20 ms) inside GEMMs
3x as long.

Usage: NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc_per_node 2 bench/p2p_contention.py -o out.json
"""
import argparse
import datetime
import json
import os
import statistics

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--sizes", default="16777216,33554432",
               help="bytes per tensor sent: 405B (4096 tok x 16384 / TP8, bf16), 70B (8192 x 8192 / TP4)")
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--shapes", default="8192x14336x8192,8192x8192x2048,4096x13312x16384,4096x16384x6656")
p.add_argument("--label", default="")
p.add_argument("-o", "--output", default="p2p_contention.json")
args = p.parse_args()

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2, "two ranks"
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
torch.cuda.set_device(dev)
comm = torch.cuda.Stream(device=dev)
pp = dist.new_group([0, 1])
other = 1 - rank


def slowest(x):
    t = torch.tensor([x], device=dev, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def exchange(bufs):
    """one send_forward_recv_forward + send_backward_recv_backward, as _p2p_ops orders them"""
    sn, rp, sp, rn = bufs
    if rank % 2 == 0:
        return [dist.isend(sn, other, group=pp), dist.irecv(rp, other, group=dist.group.WORLD),
                dist.isend(sp, other, group=pp), dist.irecv(rn, other, group=dist.group.WORLD)]
    return [dist.irecv(rp, other, group=pp), dist.isend(sn, other, group=dist.group.WORLD),
            dist.irecv(rn, other, group=pp), dist.isend(sp, other, group=dist.group.WORLD)]


def p2p_train(bufs, k):
    with torch.cuda.stream(comm):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(comm)
        works = []
        for _ in range(k):
            works += exchange(bufs)
        for w in works:
            w.wait()
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
    out = []
    for _ in range(args.repeats):
        dist.barrier()
        torch.cuda.synchronize()
        s, e, n = fn()
        torch.cuda.synchronize()
        out.append(slowest(s.elapsed_time(e) / n))
    return statistics.median(out), (max(out) - min(out)) / statistics.median(out)


def make_bufs(nbytes):
    n = nbytes // 2
    sn = torch.randn(n, device=dev, dtype=torch.bfloat16)
    sp = torch.randn(n, device=dev, dtype=torch.bfloat16)
    return [sn, torch.full((n,), float("nan"), device=dev, dtype=torch.bfloat16), sp,
            torch.full((n,), float("nan"), device=dev, dtype=torch.bfloat16)]


# p2p alone per size, with a correctness check (each rank receives the other's tensors)
p2p = {}
for nbytes in (int(x) for x in args.sizes.split(",")):
    bufs = make_bufs(nbytes)
    for w in exchange(bufs):
        w.wait()
    torch.cuda.synchronize()
    got = torch.stack([bufs[1][:4].float(), bufs[3][:4].float()])
    mine = torch.stack([bufs[0][:4].float(), bufs[2][:4].float()])
    allm = [torch.empty_like(mine) for _ in range(2)]
    dist.all_gather(allm, mine)
    ok = torch.equal(got, allm[other]) and not torch.isnan(bufs[1]).any().item() \
        and not torch.isnan(bufs[3]).any().item()
    assert ok, "p2p check failed"
    for _ in range(3):
        for w in exchange(bufs):
            w.wait()
    torch.cuda.synchronize()
    t1, _ = timed(lambda: (*p2p_train(bufs, 10), 10))
    p2p[nbytes] = (bufs, t1)
    if rank == 0:
        print(f"exchange {nbytes / 1e6:5.1f} MB x2 each way: {t1:.3f} ms "
              f"({2 * 2 * nbytes / t1 / 1e6:.0f} GB/s out+in per GPU)", flush=True)

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
    g1, g1s = timed(lambda: (*gemm_train(a, b, c, 20), 20))
    for nbytes, (bufs, x1) in p2p.items():
        kg = max(4, int(20.0 / g1))
        kx = max(4, int(3.0 * kg * g1 / x1) + 1)

        def gemm_beside():
            p2p_train(bufs, kx)
            s, e = gemm_train(a, b, c, kg)
            return s, e, kg
        g2, g2s = timed(gemm_beside)
        kx2 = max(4, int(20.0 / x1))
        kg2 = max(4, int(3.0 * kx2 * x1 / g1) + 1)

        def p2p_beside():
            gemm_train(a, b, c, kg2)
            s, e = p2p_train(bufs, kx2)
            return s, e, kx2
        x2, x2s = timed(p2p_beside)
        row = {"m": m, "n": n, "k": k, "bytes_per_tensor": nbytes, "label": args.label,
               "gemm_alone_ms": g1, "gemm_beside_ms": g2, "gemm_slowdown": g2 / g1,
               "gemm_alone_tflops": 2.0 * m * n * k / g1 / 1e9,
               "exchange_alone_ms": x1, "exchange_beside_ms": x2, "exchange_slowdown": x2 / x1,
               "spread_gemm_alone": g1s, "spread_gemm_beside": g2s, "spread_exchange_beside": x2s,
               "gemm_check_rel_err": err, "gemms_per_repeat": kg, "exchanges_in_train": kx}
        results.append(row)
        if rank == 0:
            print(f"{args.label:6s} {m}x{n}x{k:<6} {nbytes / 1e6:5.1f}MB GEMM {g1:7.3f} -> {g2:7.3f} ms "
                  f"(x{g2 / g1:5.3f}, {row['gemm_alone_tflops']:.0f} TF) | exch {x1:6.3f} -> {x2:6.3f} ms "
                  f"(x{x2 / x1:5.3f})", flush=True)

if rank == 0:
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "gpu": torch.cuda.get_device_name(dev),
            "sms": torch.cuda.get_device_properties(dev).multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()), "world": world,
            "env": {kk: v for kk, v in os.environ.items() if kk.startswith("NCCL_") or kk.startswith("CUDA_")},
            "argv": vars(args)}
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "rows": results}, f, indent=1)
    os.replace(tmp, args.output)
dist.destroy_process_group()
